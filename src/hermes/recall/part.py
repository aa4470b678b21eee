"""The recall part: `session_search` over every past conversation of the caller's scope, the
`Recall` component (the semantic index a runtime searches by meaning), and the semantic
indexer that gives new messages their vectors in the background of `hermes serve`."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from hermes.plugins import Daemon, Registry

if TYPE_CHECKING:
    from hermes.runtime import Runtime

log = logging.getLogger(__name__)

INDEXER_DELAY_S = 1.0
"""How long `hermes serve` lets its own start-up and first requests go before the indexer
loads the embedding model (numpy, onnxruntime) in the background."""


def _indexer(runtime: Runtime) -> Daemon | None:
    from hermes.memory import embeddings

    try:
        if runtime.store.vectors is None or not embeddings.enabled(runtime.settings):
            return None
    except embeddings.EmbeddingsUnavailableError as exc:
        log.warning("semantic search is off: %s", exc)
        return None
    from hermes.recall.indexer import SemanticIndexer

    indexer = SemanticIndexer(runtime.settings, runtime.store)

    async def start() -> None:
        indexer.start(delay=INDEXER_DELAY_S)

    async def stop() -> None:
        await asyncio.to_thread(indexer.stop)

    return Daemon("semantic indexer", start, stop)


async def _semantic_health(runtime: Runtime) -> dict[str, Any]:
    """Whether messages are searched by meaning too, and why not when they are not."""
    from hermes.memory import embeddings

    line = embeddings.status(runtime.settings)
    if runtime.store.vectors is None:
        line = "off (this store keeps no vectors)"
    return {"status": "ok", "detail": f"semantic search {line}"}


def register(hermes: Registry) -> None:
    from hermes.recall.component import Recall
    from hermes.recall.search import session_search

    hermes.tool(session_search, group="session_search")
    hermes.health("semantic_search", _semantic_health)
    hermes.daemon(_indexer)
    hermes.component(Recall.of)
