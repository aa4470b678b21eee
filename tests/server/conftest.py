"""API test plumbing: the real app over ASGITransport (lifespan entered), or on a real socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from pydantic import SecretStr

from hermes.config.settings import Settings
from hermes.runtime import Runtime, build_runtime
from hermes.server.app import create_app
from hermes.server.serve import bind_socket
from hermes.tools.registry import Toolset, tool

SERVER_KEY = "s3cret-server-key-0123456789"
AUTH = {"Authorization": f"Bearer {SERVER_KEY}"}


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b


@tool
def lookup_secret(name: str) -> str:
    """Return a secret value (tests check it never reaches a stream).

    Args:
        name: which secret
    """
    return f"TOOL-RESULT-{name}"


TEST_TOOLS = Toolset([add, lookup_secret])


def chat_body(content: Any = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "hermes", "messages": [{"role": "user", "content": content}], **extra}


@dataclass
class Api:
    """One running app: an httpx client on it and the runtime underneath."""

    app: FastAPI
    client: httpx.AsyncClient
    runtime: Runtime

    async def chat(
        self, content: Any = "hi", headers: dict[str, str] | None = None, **extra: Any
    ) -> httpx.Response:
        return await self.client.post(
            "/v1/chat/completions", json=chat_body(content, **extra), headers=headers or {}
        )


@contextlib.asynccontextmanager
async def open_api(settings: Settings, *, tools: Toolset | None = None) -> AsyncIterator[Api]:
    runtime = build_runtime(settings)
    if tools is not None:
        runtime.agent.toolset = tools
    app = create_app(runtime)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hermes.test") as client:
            yield Api(app, client, runtime)


@contextlib.asynccontextmanager
async def open_socket_api(
    settings: Settings, *, tools: Toolset | None = None
) -> AsyncIterator[tuple[str, Runtime]]:
    """The app on uvicorn on a free loopback port, in this event loop; yields its base URL."""
    runtime = build_runtime(settings)
    if tools is not None:
        runtime.agent.toolset = tools
    sock = bind_socket("127.0.0.1", 0)
    config = uvicorn.Config(
        create_app(runtime), lifespan="on", log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_until(lambda: server.started, what="uvicorn to start")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", runtime
    finally:
        server.should_exit = True
        await task
        sock.close()


async def wait_until(check: Callable[[], object], *, what: str, within: float = 5.0) -> None:
    """Poll with a deadline (never a bare sleep to wait for something)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(event name or None, data) for each SSE event in a response body."""
    events = []
    for block in text.split("\n\n"):
        if not block.strip() or block.startswith(":"):
            continue
        name = None
        data = []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        events.append((name, "\n".join(data)))
    return events


def chunks(text: str) -> list[dict[str, Any]]:
    return [json.loads(d) for name, d in sse_events(text) if name is None and d != "[DONE]"]


@pytest.fixture
def keyed_settings(settings: Settings) -> Settings:
    settings.server.api_key = SecretStr(SERVER_KEY)
    return settings


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with open_api(settings) as a:
        yield a


@pytest.fixture
async def keyed_api(keyed_settings: Settings) -> AsyncIterator[Api]:
    async with open_api(keyed_settings) as a:
        a.client.headers.update(AUTH)
        yield a
