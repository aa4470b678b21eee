"""The sentence-embedding model behind search by meaning.

By default that is all-MiniLM-L6-v2, whose weights ship inside the package
(`hermes/memory/minilm/`), run on the CPU by ONNX Runtime (embedding_onnx.py): nothing is
downloaded and no PyTorch is needed. `search.embeddings: endpoint` asks the model endpoint's
`/v1/embeddings` instead (embedding_endpoint.py). Loading the bundled model takes a second or
so, so it happens once per process and off a turn's path; encoding a query takes a few
milliseconds.
"""

from __future__ import annotations

import importlib.util
import logging
import threading

from hermes.config.settings import Settings
from hermes.memory.embedder import (
    DIMENSIONS,
    MAX_CHARS,
    MODEL_NAME,
    REINSTALL_HINT,
    RUNTIME_MODULES,
    Embedder,
    EmbeddingsUnavailableError,
)

__all__ = [
    "DIMENSIONS",
    "MAX_CHARS",
    "MODEL_NAME",
    "REINSTALL_HINT",
    "RUNTIME_MODULES",
    "Embedder",
    "EmbeddingsUnavailableError",
    "enabled",
    "extra_installed",
    "load",
    "vector_name",
]

log = logging.getLogger(__name__)


def extra_installed() -> bool:
    """Whether the bundled model's runtime is importable (without importing it): part of
    every install, absent only from a broken or trimmed one."""
    return all(importlib.util.find_spec(name) is not None for name in RUNTIME_MODULES)


def vector_name(settings: Settings) -> str:
    """The tag the configured model's vectors carry: vectors of different models never mix."""
    if settings.search.embeddings == "endpoint":
        return f"endpoint:{settings.search.embedding_model}"
    return MODEL_NAME


def enabled(settings: Settings) -> bool:
    """Semantic search is on for these settings; `on` without the extra is an error."""
    mode = settings.search.embeddings
    if mode == "off":
        return False
    if mode == "endpoint":
        if not settings.search.embedding_model:
            raise EmbeddingsUnavailableError(
                "search.embeddings is endpoint but search.embedding_model is not set: name the "
                "endpoint's embedding model in config.yaml (e.g. text-embedding-3-small)"
            )
        if not settings.model.base_url:
            raise EmbeddingsUnavailableError(
                "search.embeddings is endpoint but no model endpoint is set (model.base_url)"
            )
        return True
    if extra_installed():
        return True
    if mode == "on":
        missing = [m for m in RUNTIME_MODULES if importlib.util.find_spec(m) is None]
        raise EmbeddingsUnavailableError(
            f"search.embeddings is on but {', '.join(missing)} cannot be imported: {REINSTALL_HINT}"
        )
    return False


_loaded: Embedder | None = None
_loaded_for: tuple[str, str | None] | None = None  # the (vectors' name, endpoint) loaded
_load_lock = threading.Lock()
_failed: str | None = None
_failed_for: tuple[str, str | None] | None = None  # a failure sticks only for what failed


def _make(settings: Settings) -> Embedder:
    if settings.search.embeddings == "endpoint":
        from hermes.memory.embedding_endpoint import EndpointEmbedder

        return EndpointEmbedder.for_settings(settings)
    from hermes.memory.embedding_onnx import OnnxMiniLM

    return OnnxMiniLM(MODEL_NAME, settings.home / "cache" / "embeddings")


def load(settings: Settings) -> Embedder | None:
    """The process's embedder (loaded on first call, which takes seconds); None when
    semantic search is off or the model failed to load (logged once)."""
    global _loaded, _loaded_for, _failed, _failed_for
    if not enabled(settings):
        return None
    wanted = (vector_name(settings), settings.model.base_url)
    if settings.search.embeddings != "endpoint":
        wanted = (vector_name(settings), None)
    with _load_lock:
        if _loaded is not None and _loaded_for is not None and _loaded_for != wanted:
            close = getattr(_loaded, "close", None)
            if close is not None:
                close()
            _loaded = None  # another model asked for (another profile, a new setting)
        if _failed is not None and _failed_for != wanted:
            _failed = None  # what failed was another model: this one gets its own try
        if _loaded is None and _failed is None:
            try:
                _loaded, _loaded_for = _make(settings), wanted
            except Exception as exc:  # a broken install must not break search
                _failed, _failed_for = f"{type(exc).__name__}: {exc}", wanted
                log.warning(
                    "semantic search is off: the embedding model did not load (%s)", _failed
                )
        if _loaded is None and settings.search.embeddings in ("on", "endpoint"):
            raise EmbeddingsUnavailableError(f"the embedding model did not load: {_failed}")
        return _loaded


def loaded() -> Embedder | None:
    """The embedder if some caller has loaded it already; never blocks on loading."""
    return _loaded


def status(settings: Settings) -> str:
    """One line for `hermes doctor` and /health."""
    mode = settings.search.embeddings
    if mode == "off":
        return "off (search.embeddings: off)"
    name = vector_name(settings)
    if mode != "endpoint" and not extra_installed():
        return f"off (the model's runtime cannot be imported: {REINSTALL_HINT})"
    if _failed:
        return f"off (the model did not load: {_failed})"
    if _loaded is None:
        return f"on ({name})"
    return f"on ({name}, {getattr(_loaded, 'runtime', '?')}, loaded)"
