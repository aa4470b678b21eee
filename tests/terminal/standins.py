"""Loopback stand-ins for local model servers, answering as their public API docs say."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Ollama(BaseHTTPRequestHandler):
    """Ollama: `GET /` says it runs, `GET /api/tags` lists pulled models, `/v1/models` too."""

    models: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return None

    def _json(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/api/tags":
            self._json(
                {
                    "models": [
                        {
                            "name": name,
                            "model": name,
                            "modified_at": "2026-01-01T00:00:00Z",
                            "size": 2019393189,
                            "digest": "a80c4f17acd5",
                            "details": {"format": "gguf", "family": "llama"},
                        }
                        for name in self.models
                    ]
                }
            )
        elif self.path == "/v1/models":
            self._json(
                {
                    "object": "list",
                    "data": [
                        {"id": n, "object": "model", "created": 0, "owned_by": "library"}
                        for n in self.models
                    ],
                }
            )
        else:
            data = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


@contextmanager
def ollama(models: list[str]) -> Iterator[int]:
    """An Ollama stand-in on a free loopback port; yields the port."""
    handler = type("Handler", (_Ollama,), {"models": models})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port() -> int:
    """A loopback port nobody listens on (bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
