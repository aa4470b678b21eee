"""An instant OpenAI-compatible model for benchmarks, running on the benchmark's own event loop.

`hermes.testing.FakeModel` is built for tests (scripts, recording, a thread per connection);
under load its threads and the client fight over one GIL and their cost lands in the figures
of the server being measured. This one answers every chat completion with "ok" from an asyncio
protocol on the caller's loop, and times its own work per request so the benchmark can subtract
it: from the first byte of a request to the last byte of its answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httptools

_ANSWER = {
    "object": "chat.completion",
    "model": "fake-model",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}
_MODELS = json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})


@dataclass
class InstantModel:
    """Start with `await model.start()`; `base_url` is then the OpenAI base URL (…/v1)."""

    host: str = "127.0.0.1"
    port: int = 0
    own_seconds: dict[str, float] = field(default_factory=dict)
    """Time spent per request, keyed by the content of the request's last message."""
    first_body: dict[str, Any] | None = None
    answered_at: dict[str, float] = field(default_factory=dict)
    """perf_counter() when the last answer to each tag (as `own_seconds`) was written."""
    requests: int = 0
    _server: asyncio.Server | None = None

    async def start(self) -> InstantModel:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Protocol(self), self.host, self.port)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() first"
        port = self._server.sockets[0].getsockname()[1]
        return f"http://{self.host}:{port}/v1"

    def take(self, tag: str) -> float:
        return self.own_seconds.pop(tag, 0.0)

    def answer(self, request: dict[str, Any], size: int) -> bytes:
        self.requests += 1
        if self.first_body is None:
            self.first_body = request
        prompt = size // 4
        return json.dumps(
            {
                **_ANSWER,
                "id": f"chatcmpl-{self.requests}",
                "created": int(time.time()),
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": 1,
                    "total_tokens": prompt + 1,
                },
            }
        ).encode()


class _Protocol(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; requests are answered in order as they complete."""

    def __init__(self, model: InstantModel) -> None:
        self.model = model
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self._body: list[bytes] = []
        self._started = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if not self._started:
            self._started = time.perf_counter()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            assert self.transport is not None
            self.transport.close()

    # httptools callbacks
    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        assert self.transport is not None
        body = b"".join(self._body)
        request: dict[str, Any] | None = None
        kind = b"application/json"
        if self.parser.get_method() == b"POST":
            request = json.loads(body)
            payload = self.model.answer(request, len(body))
            if request.get("stream"):
                payload, kind = _as_stream(payload), b"text/event-stream"
        else:
            payload = _MODELS.encode()
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: "
            + kind
            + b"\r\ncontent-length: "
            + str(len(payload)).encode()
            + b"\r\n\r\n"
            + payload
        )
        if request is not None:
            tag = str((request.get("messages") or [{}])[-1].get("content"))
            elapsed = time.perf_counter() - self._started
            self.model.own_seconds[tag] = self.model.own_seconds.get(tag, 0.0) + elapsed
            self.model.answered_at[tag] = time.perf_counter()
        self._body, self._started = [], 0.0


def _as_stream(payload: bytes) -> bytes:
    """The same answer as SSE chunks (for clients that stream, such as the gateway)."""
    answer = json.loads(payload)
    base = {
        "id": answer["id"],
        "object": "chat.completion.chunk",
        "created": answer["created"],
        "model": answer["model"],
    }
    text = answer["choices"][0]["message"]["content"]
    chunks = [
        {
            **base,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}
            ],
        },
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": answer["usage"],
        },
    ]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + (
        b"data: [DONE]\n\n"
    )
