"""Fixtures for the platform adapters: each platform's stand-in, the real runtime with the fake
model, the gateway started as `hermes serve` starts it, and the HTTP app (for webhooks)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from hermes.config.settings import load_settings
from hermes.gateway.live import LiveTiming
from hermes.gateway.runner import Gateway
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from tests.standins.synapse import Synapse


async def until(condition: Callable[[], Any], within: float = 30.0, what: str = "") -> Any:
    """Poll `condition` until it is truthy (deadline, never a fixed sleep). The deadline is
    generous: a reconnect on a loaded two-core machine can take seconds, and a passing test
    never waits for it."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await asyncio.sleep(0.01)


def quicken(gateway: Gateway, platform: str, scale: float = 0.1) -> float:
    """Run the gateway's live answers at `scale` times the platforms' pace (the same behaviour,
    without sleeping through real edit intervals); `platform`'s edit interval at that pace."""
    gateway.live_timing = LiveTiming(scale=scale)
    return gateway.live_timing.interval(gateway.adapters[platform])


def write_config(home: Path, data: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


class Served:
    """A started gateway and an HTTP client on the app `hermes serve` would run."""

    def __init__(self, gateway: Gateway, client: httpx.AsyncClient) -> None:
        self.gateway = gateway
        self.client = client

    def status(self, platform: str) -> Any:
        return self.gateway.status[platform]


@pytest.fixture
def serve_gateway(
    model_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, home: Path
) -> Callable[..., Any]:
    """`async with serve_gateway(env, platform) as served:` — environment set, runtime built,
    gateway started and `platform` connected, app reachable through `served.client`."""
    import contextlib

    @contextlib.asynccontextmanager
    async def start(
        env: dict[str, str],
        platform: str,
        *,
        config: dict[str, Any] | None = None,
        connected: bool = True,
    ) -> AsyncIterator[Served]:
        if config:
            write_config(home, {"gateway": {platform: config}})
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = load_settings()
        settings.model.max_retries = 0
        runtime = build_runtime(settings)
        gateway = runtime.services.get(Gateway)
        gateway.backoff = (0.05, 0.1, 0.2)
        app = create_app(runtime, close_runtime=False)
        transport = httpx.ASGITransport(app=app)
        try:
            await gateway.start()
            async with httpx.AsyncClient(transport=transport, base_url="http://hermes.test") as c:
                if connected:
                    await until(lambda: gateway.status[platform].connected, what="connected")
                yield Served(gateway, c)
        finally:
            await gateway.stop()
            await runtime.aclose()

    return start


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synapse]:
    """One real Synapse for the whole test session (about six seconds to start)."""
    server = Synapse(tmp_path_factory.mktemp("synapse")).start()
    try:
        yield server
    finally:
        server.stop()
