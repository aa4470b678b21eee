"""Gateway fixtures: the real python-telegram-bot against a loopback Bot API stand-in, the
real runtime with the fake model, and the gateway started as `hermes serve` would."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.config.settings import Settings, load_settings
from hermes.gateway.runner import Gateway
from hermes.runtime import Runtime, build_runtime
from tests.memory.providers.conftest import honcho  # noqa: F401 (a fixture, for the provider tests here)
from tests.standins.telegram_api import TelegramBotAPI

OWNER = 42
FRIEND = 43
STRANGER = 666


@pytest.fixture
async def tg() -> AsyncIterator[TelegramBotAPI]:
    async with TelegramBotAPI() as api:
        yield api


@pytest.fixture
def gw_env(
    tg: TelegramBotAPI, model_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, home: Path
) -> dict[str, str]:
    env = {
        "TELEGRAM_BOT_TOKEN": tg.state.token,
        "TELEGRAM_API_BASE": tg.base_url,
        "TELEGRAM_ALLOWED_USERS": f"{OWNER},{FRIEND}",
        "HERMES_GATEWAY_OWNER": f"telegram:{OWNER}",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def gw_settings(gw_env: dict[str, str]) -> Settings:
    settings = load_settings()
    settings.model.max_retries = 0
    return settings


@pytest.fixture
async def gw_runtime(gw_settings: Settings) -> AsyncIterator[Runtime]:
    runtime = build_runtime(gw_settings)
    try:
        yield runtime
    finally:
        await runtime.aclose()


@pytest.fixture
async def gateway(gw_runtime: Runtime) -> AsyncIterator[Gateway]:
    gw = gw_runtime.services.get(Gateway)
    gw.backoff = (0.05, 0.1, 0.2)
    await gw.start()
    try:
        await until(lambda: gw.status["telegram"].connected)
        yield gw
    finally:
        await gw.stop()


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


def texts(tg: TelegramBotAPI) -> list[str]:
    return [str(m["text"]) for m in tg.sent]
