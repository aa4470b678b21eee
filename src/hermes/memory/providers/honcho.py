"""Honcho (plasticlabs) through its official SDK, `honcho-ai`.

A scope is a Honcho peer (`owner`, `user-42`) in the workspace `memory.honcho.workspace`; the
agent is the peer `memory.honcho.assistant_peer`. Each Hermes session is a Honcho session of
that user (`<peer>--<session>`), so two users' sessions never meet. Recall is the peer's
context (its representation and peer card) searched with the user's last message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes.config.settings import Settings
from hermes.memory.providers.backend import ProviderError, Said
from hermes.memory.providers.identity import safe_id
from hermes.memory.providers.plugin import add_provider
from hermes.memory.providers.sdk import require
from hermes.plugins import Registry

NAME = "honcho"
RECALL_TOP_K = 10
ABOUT = (
    "Search Honcho's memory of this user: messages they wrote in past conversations, best "
    "match first. Use it when the user refers to something said before that is not in your "
    "notes or this conversation."
)


class HonchoBackend:
    def __init__(self, settings: Settings) -> None:
        cfg = settings.memory.honcho
        require("honcho", NAME, "the Honcho SDK (honcho-ai)")
        from honcho import Honcho

        key = cfg.api_key.get_secret_value() if cfg.api_key else None
        if key is None and cfg.base_url is None:
            raise ProviderError(
                "memory.provider is honcho but no API key is set: set HONCHO_API_KEY (or "
                "memory.honcho.api_key), or HONCHO_BASE_URL for a self-hosted Honcho"
            )
        self.client = Honcho(
            api_key=key or "not-needed",
            base_url=cfg.base_url,
            workspace_id=cfg.workspace,
            timeout=settings.memory.provider_timeout,
            max_retries=0,  # the worker is the retry: an SDK back-off would stall it
        )
        self.assistant = cfg.assistant_peer
        self.where = cfg.base_url or self.client.base_url

    def check(self) -> str:
        self.client.peer(self.assistant)
        return f"connected to Honcho at {self.where} (workspace {self.client.workspace_id})"

    def recall(self, user: str, query: str) -> str:
        context = self.client.peer(user).context(
            search_query=query or None, search_top_k=RECALL_TOP_K if query else None
        )
        parts = []
        if context.peer_card:
            parts.append("Peer card:\n" + "\n".join(f"- {line}" for line in context.peer_card))
        if context.representation:
            parts.append(context.representation.strip())
        return "\n\n".join(parts)

    def store(self, user: str, session: str, turn: Sequence[Said]) -> None:
        from honcho.api_types import MessageCreateParams

        honcho_session = self.client.session(
            self._session_id(user, session), peers=[user, self.assistant]
        )
        honcho_session.add_messages(
            [
                MessageCreateParams(
                    peer_id=user if said.role == "user" else self.assistant, content=said.content
                )
                for said in turn
            ]
        )

    def search(self, user: str, query: str, limit: int) -> list[str]:
        return [m.content for m in self.client.peer(user).search(query, limit=limit)]

    def note(self, user: str, target: str, action: str, entry: str) -> None:
        """A note entry as a conclusion the assistant peer holds about the user (removed when
        the entry leaves the notes): Honcho's own kind of durable fact."""
        about = self.client.peer(self.assistant).conclusions_of(user)
        if action == "add":
            about.create([{"content": entry}])
            return
        for conclusion in list(_all(about.list())):
            if conclusion.content == entry:
                about.delete(conclusion.id)

    def forget(self, user: str) -> int:
        """Every session of the peer (with its messages) and every conclusion about it: its
        own, and those the assistant peer holds (the mirrored notes)."""
        peer = self.client.peer(user)
        removed = 0
        for session in list(_all(peer.sessions())):
            session.delete()
            removed += 1
        for view in (peer.conclusions, self.client.peer(self.assistant).conclusions_of(user)):
            for conclusion in list(_all(view.list())):
                view.delete(conclusion.id)
                removed += 1
        return removed

    def close(self) -> None:
        http = getattr(self.client, "_http", None)
        closer = getattr(http, "close", None)
        if callable(closer):
            closer()

    def _session_id(self, user: str, session: str) -> str:
        return f"{user}--{safe_id(session)}"


def _all(page: Any) -> Any:
    """Every item of a paginated SDK answer."""
    yield from page


BACKEND = HonchoBackend


def register(hermes: Registry) -> None:
    add_provider(hermes, NAME, HonchoBackend, ABOUT)
