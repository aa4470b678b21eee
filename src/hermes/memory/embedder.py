"""What an embedder is, and the limits every implementation shares: the contract both the
bundled model (embedding_onnx.py) and the endpoint (embedding_endpoint.py) implement, kept
apart from `embeddings`, which picks and loads one of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from hermes.errors import HermesError

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384  # of that model's vectors
MAX_CHARS = 2000  # the model reads 256 word pieces; longer text only costs time
RUNTIME_MODULES = ("numpy", "onnxruntime", "onnx", "tokenizers", "safetensors")
REINSTALL_HINT = "reinstall Hermes (pip install -e . from a clone) or set search.embeddings: off"


class EmbeddingsUnavailableError(HermesError, RuntimeError):
    """Search by meaning was asked for (`on`, `endpoint`) but its model cannot be had."""


class Embedder(Protocol):
    """Texts to unit-length float32 vectors; `name` tags the vectors it makes."""

    name: str
    dimensions: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_query(self, text: str) -> np.ndarray:
        """One search question's vector (may use a faster, slightly coarser model)."""
        ...
