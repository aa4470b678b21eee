"""A streamable-HTTP MCP server for the tests, from the SDK's MCPServer, run by uvicorn in a
thread on a free loopback port; it records the request headers it saw."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer


def make_server() -> MCPServer:
    server = MCPServer("notes-http")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    @server.tool()
    def secret() -> str:
        """A tool the config excludes."""
        return "should never be called"

    return server


class HttpMcpServer:
    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        app = make_server().streamable_http_app()

        async def recording(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
            await app(scope, receive, send)

        config = uvicorn.Config(
            recording, host="127.0.0.1", port=self.port, log_level="error", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> HttpMcpServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the test MCP server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
