"""The memory part: the notes provider (MEMORY.md / USER.md, the `memory` tool),
`session_search` over every past conversation of the caller's scope, and the semantic
indexer that gives new messages their vectors in the background of `hermes serve`."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from hermes.plugins import Registry, Service

if TYPE_CHECKING:
    from hermes.runtime import Runtime

log = logging.getLogger(__name__)

INDEXER_DELAY_S = 1.0
"""How long `hermes serve` lets its own start-up and first requests go before the indexer
loads the embedding model (numpy, onnxruntime) in the background."""


def _indexer(runtime: Runtime) -> Service | None:
    from hermes.memory import embeddings

    try:
        if runtime.store.vectors is None or not embeddings.enabled(runtime.settings):
            return None
    except embeddings.EmbeddingsUnavailableError as exc:
        log.warning("semantic search is off: %s", exc)
        return None
    from hermes.memory.indexer import SemanticIndexer

    indexer = SemanticIndexer(runtime.settings, runtime.store)

    async def start() -> None:
        indexer.start(delay=INDEXER_DELAY_S)

    async def stop() -> None:
        await asyncio.to_thread(indexer.stop)

    return Service("semantic indexer", start, stop)


async def _semantic_health(runtime: Runtime) -> dict[str, Any]:
    """Whether messages are searched by meaning too, and why not when they are not."""
    from hermes.memory import embeddings

    line = embeddings.status(runtime.settings)
    if runtime.store.vectors is None:
        line = "off (this store keeps no vectors)"
    return {"status": "ok", "detail": f"semantic search {line}"}


def register(hermes: Registry) -> None:
    from hermes.memory import providers
    from hermes.memory.health import notes_health
    from hermes.memory.provider import NotesProvider
    from hermes.memory.search import session_search

    hermes.memory_provider(NotesProvider)
    providers.register(hermes)  # Honcho, Mem0, Supermemory: registered as a plugin would
    hermes.tool(session_search, group="session_search")
    hermes.health("notes", notes_health)
    hermes.health("semantic_search", _semantic_health)
    hermes.service(_indexer)
