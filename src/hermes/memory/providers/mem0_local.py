"""Mem0 (the open-source `mem0ai` library) itself: the engine the Mem0 worker process runs
(`mem0_worker`), never imported by the server process.

Its fact extraction asks Hermes' own model endpoint (`model.base_url`, `memory.mem0.model` or
`model.name`); its vectors come from the bundled MiniLM (or the endpoint's /v1/embeddings with
`memory.mem0.embedder: endpoint`); they are stored by qdrant's on-disk local mode under
`$HERMES_HOME/mem0` (no server). A scope is a Mem0 `user_id`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes import tls
from hermes.config.settings import Settings
from hermes.memory.providers.backend import ProviderError, Said, StoreHeld
from hermes.memory.providers.sdk import quiet_mem0, require

NAME = "mem0"
RECALL_LIMIT = 8
HELD = "is already accessed by another instance"  # qdrant's words for a locked folder


def mem0_path(settings: Settings) -> Path:
    return settings.memory.mem0.path or settings.home / "mem0"


def share_path(settings: Settings) -> Path:
    """Where the worker that holds the store answers other processes (`serve.py`)."""
    return mem0_path(settings) / "worker.sock"


class _MiniLM:
    """The bundled MiniLM as a mem0 embedder (mem0 asks for lists of floats)."""

    def __init__(self, settings: Settings) -> None:
        from hermes.memory import embeddings

        search = settings.search.model_copy(update={"embeddings": "on"})
        try:
            embedder = embeddings.load(settings.model_copy(update={"search": search}))
        except embeddings.EmbeddingsUnavailableError as exc:
            raise ProviderError(f"mem0 needs the bundled embedding model: {exc}") from None
        if embedder is None:
            raise ProviderError("mem0 needs the bundled embedding model, which did not load")
        self.embedder = embedder
        self.config = None

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return [float(x) for x in self.embedder.encode([text])[0]]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embedder.encode(list(texts))]


def _config(settings: Settings, folder: Path) -> dict[str, Any]:
    cfg = settings.memory.mem0
    model = settings.model
    if not model.base_url:
        raise ProviderError(
            "mem0 extracts facts with Hermes' model, but no model endpoint is set "
            "(model.base_url / OPENAI_BASE_URL)"
        )
    name = cfg.model or model.name
    if not name:
        raise ProviderError("mem0 needs a model name: set memory.mem0.model or model.name")
    key = model.api_key.get_secret_value() if model.api_key else "not-needed"
    endpoint = cfg.embedder == "endpoint"
    if endpoint and not cfg.embedding_model:
        raise ProviderError(
            "memory.mem0.embedder is endpoint but memory.mem0.embedding_model is not set"
        )
    return {
        "llm": {
            "provider": "openai",
            "config": {"model": name, "api_key": key, "openai_base_url": model.base_url},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": cfg.embedding_model if endpoint else "unused",
                "api_key": key,
                "openai_base_url": model.base_url,
                "embedding_dims": cfg.embedding_dims,
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(folder / "qdrant"),
                "on_disk": True,
                "collection_name": cfg.collection,
                "embedding_model_dims": cfg.embedding_dims if endpoint else 384,
            },
        },
        "history_db_path": str(folder / "history.db"),
    }


class Mem0Local:
    """The mem0 library with Hermes' configuration: a `Backend`, run in the worker process."""

    def __init__(self, settings: Settings) -> None:
        folder = mem0_path(settings)
        folder.mkdir(parents=True, exist_ok=True)
        quiet_mem0(settings.home)
        require("mem0", NAME, "the mem0ai library")
        from mem0 import Memory
        from mem0.configs.base import MemoryConfig
        from openai import DefaultHttpxClient, OpenAI

        config = _config(settings, folder)
        try:
            self.memory = Memory(MemoryConfig(**config))
        except Exception as exc:
            if HELD in str(exc):  # qdrant's local mode: one process at a time
                raise StoreHeld(
                    f"mem0's store in {folder} is in use by another Hermes process",
                    share_path(settings),
                ) from None
            raise ProviderError(f"mem0 could not open its store in {folder}: {exc}") from None
        self.share_at = share_path(settings)
        timeout = settings.memory.provider_timeout
        llm = config["llm"]["config"]
        # its own client, so no OPENROUTER_API_KEY/OPENAI_BASE_URL in the environment redirects it
        self.memory.llm.client = OpenAI(
            api_key=llm["api_key"],
            base_url=llm["openai_base_url"],
            timeout=timeout,
            max_retries=0,
            http_client=DefaultHttpxClient(verify=tls.openai_context()),
        )
        if settings.memory.mem0.embedder == "minilm":
            self.memory.embedding_model = _MiniLM(settings)
        else:
            self.memory.embedding_model.client = OpenAI(
                api_key=llm["api_key"],
                base_url=llm["openai_base_url"],
                timeout=timeout,
                http_client=DefaultHttpxClient(verify=tls.openai_context()),
            )
        self.memory.vector_store._bm25_encoder = False  # fastembed would download a model
        self.folder = folder

    def check(self) -> str:
        self.memory.get_all(filters={"user_id": "hermes-setup-check"}, top_k=1)
        return f"mem0 runs locally: vectors in {self.folder}, facts extracted by Hermes' model"

    def recall(self, user: str, query: str) -> str:
        if query.strip():
            found = self.memory.search(query, filters={"user_id": user}, top_k=RECALL_LIMIT)
        else:
            found = self.memory.get_all(filters={"user_id": user}, top_k=RECALL_LIMIT)
        facts = _texts(found)
        return "\n".join(f"- {fact}" for fact in facts)

    def store(self, user: str, session: str, turn: Sequence[Said]) -> None:
        messages = [{"role": s.role, "content": s.content} for s in turn]
        self.memory.add(messages, user_id=user, metadata={"hermes_session": session})

    def search(self, user: str, query: str, limit: int) -> list[str]:
        return _texts(self.memory.search(query, filters={"user_id": user}, top_k=limit))

    def note(self, user: str, target: str, action: str, entry: str) -> None:
        """A note entry kept as a Mem0 memory as it is (no extraction), removed with it."""
        if action == "add":
            self.memory.add(entry, user_id=user, infer=False, metadata={"hermes_note": target})
            return
        found = self.memory.get_all(filters={"user_id": user}, top_k=100_000)
        rows = found.get("results", []) if isinstance(found, dict) else found
        for row in rows:
            if isinstance(row, dict) and row.get("memory") == entry and row.get("id"):
                self.memory.delete(row["id"])

    def forget(self, user: str) -> int:
        count = len(_texts(self.memory.get_all(filters={"user_id": user}, top_k=100_000)))
        self.memory.delete_all(user_id=user)
        return count

    def close(self) -> None:
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None:
            client.close()  # releases qdrant's lock on the folder
        db = getattr(self.memory, "db", None)
        if db is not None:
            db.close()


def _texts(found: Any) -> list[str]:
    rows = found.get("results", []) if isinstance(found, dict) else found
    if not isinstance(rows, list):
        raise ProviderError(f"mem0 answered {type(found).__name__}, not a list of memories")
    return [str(r["memory"]) for r in rows if isinstance(r, dict) and r.get("memory")]
