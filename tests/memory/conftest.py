"""A stand-in embedder for tests about which messages get vectors and when searches pay
for loading them, not about what the vectors say: no model loads."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hermes.memory.embeddings import MODEL_NAME

WINDOW = 1000  # the smallest `search.max_vectors` allowed


class Digests:
    """Unit vectors from each text's digest: equal texts, equal vectors (tagged as the real
    model's, which is what the commands look for)."""

    name = MODEL_NAME
    dimensions = 8

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raw = np.array(
            [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8) for t in texts],
            dtype=np.float32,
        ).reshape(len(texts), self.dimensions)
        raw -= 127.5
        return raw / np.linalg.norm(raw, axis=1, keepdims=True)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


@pytest.fixture
def digests(home: Path, monkeypatch: pytest.MonkeyPatch) -> Digests:
    """Semantic search on, by `Digests`, with `search.max_vectors` at WINDOW."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    monkeypatch.setattr("hermes.memory.embeddings.extra_installed", lambda: True)
    stand_in = Digests()
    monkeypatch.setattr("hermes.memory.embeddings._loaded", stand_in)
    # and loaded for no particular model: else one loaded earlier in the process (an endpoint
    # test's) makes `load` swap the stand-in for the real model, seconds of CPU per import
    monkeypatch.setattr("hermes.memory.embeddings._loaded_for", None)
    monkeypatch.setattr("hermes.memory.embeddings._failed", None)
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(f"search:\n  max_vectors: {WINDOW}\n")
    return stand_in
