"""Supermemory through its official Python SDK (`supermemory`).

A scope is a Supermemory namespace (`<container_prefix>-owner`, `hermes-user-42`): documents,
the memories Supermemory learns from them, searches and the profile all live inside it, and
deleting the namespace forgets the user. Each turn is a document of that namespace; recall is
the namespace's profile plus a search with the user's last message.
"""

from __future__ import annotations

from collections.abc import Sequence

from hermes import tls
from hermes.config.settings import Settings
from hermes.memory.providers.backend import ProviderError, Said
from hermes.memory.providers.plugin import add_provider
from hermes.memory.providers.sdk import require
from hermes.plugins import Registry

NAME = "supermemory"
RECALL_LIMIT = 6
ABOUT = (
    "Search Supermemory's memory of this user (what it learned from past conversations), best "
    "match first. Use it when the user refers to something said before that is not in your "
    "notes or this conversation."
)


class SupermemoryBackend:
    def __init__(self, settings: Settings) -> None:
        cfg = settings.memory.supermemory
        require("supermemory", NAME, "the Supermemory SDK (supermemory)")
        from supermemory import Supermemory

        if cfg.api_key is None:
            raise ProviderError(
                "memory.provider is supermemory but no API key is set: set SUPERMEMORY_API_KEY "
                "(or memory.supermemory.api_key)"
            )
        import httpx

        timeout = settings.memory.provider_timeout
        self.http = httpx.Client(
            verify=tls.httpx_context(), timeout=timeout
        )  # ours, so close() releases its sockets
        self.client = Supermemory(
            api_key=cfg.api_key.get_secret_value(),
            base_url=cfg.base_url,
            timeout=timeout,
            # no SDK retries: its back-off (1 s, 2 s, …) would hold the provider's one worker
            # behind a down service; a failed sync is counted and the next turn tries again
            max_retries=0,
            httpx_client=self.http,
        )
        self.prefix = cfg.container_prefix
        self.where = cfg.base_url or "https://api.supermemory.ai"

    def namespace(self, user: str) -> str:
        return f"{self.prefix}-{user}"

    def check(self) -> str:
        self.client.search(self.namespace("setup-check"), query="hello", limit=1)
        return f"connected to Supermemory at {self.where}"

    def recall(self, user: str, query: str) -> str:
        namespace = self.namespace(user)
        profile = self.client.profile(namespace).profile
        facts = [f.memory for f in [*profile.static, *profile.dynamic]]
        if query.strip():
            found = self.client.search(namespace, query=query, limit=RECALL_LIMIT)
            facts += [text for r in found.results if (text := r.memory or r.chunk)]
        return "\n".join(f"- {fact}" for fact in dict.fromkeys(facts))

    def store(self, user: str, session: str, turn: Sequence[Said]) -> None:
        content = "\n".join(f"{s.role}: {s.content}" for s in turn)
        self.client.add(self.namespace(user), content=content, metadata={"hermes_session": session})

    def search(self, user: str, query: str, limit: int) -> list[str]:
        found = self.client.search(self.namespace(user), query=query, limit=limit)
        return [text for r in found.results if (text := r.memory or r.chunk)]

    def note(self, user: str, target: str, action: str, entry: str) -> None:
        """An added note entry becomes a document of the user's namespace. Removals are not
        mirrored: the namespace API has no way to delete one document's memories."""
        if action == "add":
            self.client.add(
                self.namespace(user),
                content=f"A note kept about the user: {entry}",
                metadata={"hermes_note": target},
            )

    def forget(self, user: str) -> int:
        from supermemory.errors import NotFoundError

        try:
            deleted = self.client.namespaces.delete(self.namespace(user))
        except NotFoundError:
            return 0
        documents = getattr(deleted, "deleted_documents_count", 0) or 0
        memories = getattr(deleted, "deleted_memories_count", 0) or 0
        return int(documents) + int(memories)

    def close(self) -> None:
        self.http.close()


BACKEND = SupermemoryBackend


def register(hermes: Registry) -> None:
    add_provider(hermes, NAME, SupermemoryBackend, ABOUT)
