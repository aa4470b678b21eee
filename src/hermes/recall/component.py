"""The recall component: one per runtime, built by the composition root.

It owns what recall keeps in memory for a store (the semantic index: each scope's matrix of
vectors) and the background load of the embedding model, so two runtimes (or two tests) in
one process never share a cache keyed by a module global, and closing the runtime drops it.
Tools reach it as `ctx.services.get(Recall)`; the CLI, which opens a store without a
runtime, builds one for its command.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from hermes.config.settings import Settings
from hermes.store.base import Store

if TYPE_CHECKING:
    from hermes.recall.ranking import SemanticSearch
    from hermes.recall.semantic import SemanticIndex
    from hermes.runtime import Runtime


class Recall:
    """Search by meaning for one store, made on first use (numpy and the model load then)."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._index: SemanticIndex | None = None
        self._lock = threading.Lock()
        self._loading = threading.Event()

    @classmethod
    def of(cls, runtime: Runtime) -> Recall:
        """The component factory a part registers (`hermes.component(Recall.of)`)."""
        return cls(runtime.settings, runtime.store)

    def semantic(self, *, wait: bool) -> SemanticSearch | None:
        """The semantic index, or None: search by meaning off, no vectors in this backend,
        or — with `wait` False — the model not loaded yet (it loads in the background; the
        caller searches by words alone rather than stall a turn for seconds)."""
        from hermes.memory import embeddings

        if self.store.vectors is None or not embeddings.enabled(self.settings):
            return None
        embedder = embeddings.load(self.settings) if wait else embeddings.loaded()
        if embedder is None:
            if not wait:
                self._load_in_background()
            return None
        with self._lock:
            if self._index is None:
                from hermes.recall.semantic import SemanticIndex

                self._index = SemanticIndex(
                    self.store, embedder, max_vectors=self.settings.search.max_vectors
                )
            return self._index

    def _load_in_background(self) -> None:
        from hermes.memory import embeddings

        if self._loading.is_set():
            return
        self._loading.set()
        threading.Thread(
            target=lambda: embeddings.load(self.settings),
            name="hermes-embeddings-load",
            daemon=True,
        ).start()
