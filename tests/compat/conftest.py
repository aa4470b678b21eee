"""The compatibility suite: real client libraries against one real Hermes server.

One server (uvicorn on a loopback port, in a thread with its own event loop) and one scripted
fake model serve every test of the suite, so the libraries' import and start-up cost is paid
once. Each test scripts the fake, drives a library exactly as its docs show, and checks both
what the library returned and what reached the model.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from hermes.config.settings import load_settings
from hermes.runtime import Runtime, build_runtime
from hermes.server.app import create_app
from hermes.server.serve import bind_socket
from hermes.testing.fake_model import FakeModel
from tests.server.conftest import TEST_TOOLS

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


class ThreadedServer:
    """`hermes serve`'s app on uvicorn in a background thread (its own event loop)."""

    def __init__(self, home: Path, fake: FakeModel) -> None:
        with pytest.MonkeyPatch.context() as env:
            for name in ("OPENAI_API_KEY", "HERMES_API_KEY", "OPENAI_BASE_URL"):
                env.delenv(name, raising=False)
            env.setenv("HERMES_HOME", str(home))
            env.setenv("OPENAI_BASE_URL", fake.base_url)
            env.setenv("HERMES_MODEL", "fake-model")
            self.settings = load_settings()
        self.settings.model.max_retries = 0
        self.settings.memory.review_interval = 0  # no background model calls between tests
        self.runtime: Runtime | None = None
        self._server: uvicorn.Server | None = None
        self._sock = bind_socket("127.0.0.1", 0)
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._main, name="hermes-compat", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self.runtime = build_runtime(self.settings)
        self.runtime.agent.toolset = TEST_TOOLS
        config = uvicorn.Config(
            create_app(self.runtime), lifespan="on", log_level="warning", access_log=False
        )
        self._server = uvicorn.Server(config)
        await self._server.serve(sockets=[self._sock])

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not (self._server is not None and self._server.started):
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the Hermes compat server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(timeout=20)
        self._sock.close()


@dataclass
class Hermes:
    """What a compat test gets: the server's /v1 URL, the fake model behind it, the runtime."""

    base_url: str
    fake: FakeModel
    server: ThreadedServer
    _sync_clients: list[Any] = field(default_factory=list)

    def closing(self, client: Any) -> Any:
        """Close this (sync) client when the test ends."""
        self._sync_clients.append(client)
        return client

    @property
    def runtime(self) -> Runtime:
        assert self.server.runtime is not None
        return self.server.runtime


@pytest.fixture(scope="session")
def compat_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hermes]:
    with FakeModel() as fake:
        server = ThreadedServer(tmp_path_factory.mktemp("compat-home"), fake)
        server.start()
        try:
            yield Hermes(server.base_url, fake, server)
        finally:
            server.stop()


@pytest.fixture
def hermes(compat_server: Hermes) -> Iterator[Hermes]:
    """The shared server with a clean script; the script must be used up by the test."""
    compat_server.fake.reset()
    yield compat_server
    try:
        compat_server.fake.assert_complete()
    finally:
        compat_server.fake.reset()
        while compat_server._sync_clients:
            compat_server._sync_clients.pop().close()
        # Some libraries open an HTTP client per call and never close it (llm builds an
        # openai.OpenAI per prompt); collect those sockets here, where that is known, rather
        # than let their ResourceWarning surface in whatever test runs next.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
