"""Vectors from the model endpoint's `/v1/embeddings` (`search.embeddings: endpoint`).

For users who prefer their provider's embedding model to the bundled one. The endpoint and
key are the chat model's (`model.base_url`, `model.api_key`); the embedding model is
`search.embedding_model`. Its vectors are tagged `endpoint:<model>`, so they never mix with
the bundled model's; their size is learnt from the first answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx

from hermes import tls
from hermes.config.settings import Settings
from hermes.memory.embedder import MAX_CHARS, EmbeddingsUnavailableError

if TYPE_CHECKING:
    import numpy as np

BATCH = 64  # texts per request: well under every provider's input limit


class EndpointEmbedder:
    """Texts to unit-length float32 vectors by an OpenAI-compatible embeddings API."""

    runtime = "endpoint"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.name = f"endpoint:{model}"
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._client = httpx.Client(
            verify=tls.httpx_context(),
            headers=headers,
            timeout=timeout,
            transport=transport or httpx.HTTPTransport(verify=tls.httpx_context(), retries=1),
        )
        try:
            self.dimensions = int(self._request(["dimensions"]).shape[1])
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._client.close()

    @classmethod
    def for_settings(cls, settings: Settings) -> EndpointEmbedder:
        model, base_url = settings.search.embedding_model, settings.model.base_url
        if not model or not base_url:
            raise EmbeddingsUnavailableError(
                "search.embeddings: endpoint needs model.base_url and search.embedding_model"
            )
        key = settings.model.api_key.get_secret_value() if settings.model.api_key else None
        return cls(base_url, model, key, timeout=settings.model.timeout)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        blocks = [
            self._request([t[:MAX_CHARS] for t in texts[start : start + BATCH]])
            for start in range(0, len(texts), BATCH)
        ]
        return np.concatenate(blocks)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def _request(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        try:
            response = self._client.post(self._url, json={"model": self._model, "input": texts})
        except httpx.HTTPError as exc:
            raise EmbeddingsUnavailableError(
                f"the embeddings endpoint {self._url} did not answer ({type(exc).__name__})"
            ) from exc
        if response.status_code != 200:
            raise EmbeddingsUnavailableError(
                f"the embeddings endpoint {self._url} answered {response.status_code} for "
                f"model {self._model!r}: {_reason(response)}"
            )
        try:
            data = sorted(response.json()["data"], key=lambda item: item.get("index", 0))
            vectors = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingsUnavailableError(
                f"the embeddings endpoint {self._url} gave no list of vectors"
            ) from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbeddingsUnavailableError(
                f"the embeddings endpoint {self._url} gave {len(vectors)} vectors "
                f"for {len(texts)} texts"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)


def _reason(response: httpx.Response) -> str:
    try:
        body: Any = response.json()
        return str(body.get("error", {}).get("message") or body)[:200]
    except ValueError:
        return response.text[:200]
