"""Two gateway runners (two replicas: own homes, own store handles) on one PostgreSQL with
the Telegram stand-in: one polls at a time, the other stands by; when the poller dies
without releasing its lease the other takes over within the lease's time, and every
message gets exactly one answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.gateway.runner import Gateway
from hermes.runtime import Runtime, build_runtime
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, texts, until

TTL = 6.0


async def _replica(home: Path, env: dict[str, str]) -> tuple[Runtime, Gateway]:
    settings = load_settings(home, env)
    settings.model.max_retries = 0
    # off the loop: in one process, a replica starting must not stall the other's renewals
    runtime = await asyncio.to_thread(build_runtime, settings)
    gw = Gateway(runtime, backoff=(0.05, 0.1), lease_seconds=TTL)
    await gw.start()
    return runtime, gw


@pytest.fixture
def homes(tmp_path: Path) -> list[Path]:
    made = [tmp_path / "a", tmp_path / "b"]
    for home in made:
        home.mkdir()
    return made


@pytest.fixture
async def two(
    tg: TelegramBotAPI, model_env: dict[str, str], pg_url: str, homes: list[Path]
) -> AsyncIterator[list[tuple[Runtime, Gateway]]]:
    env = {
        **model_env,
        "HERMES_DATABASE_URL": pg_url,
        "TELEGRAM_BOT_TOKEN": tg.state.token,
        "TELEGRAM_API_BASE": tg.base_url,
        "TELEGRAM_ALLOWED_USERS": str(OWNER),
        "HERMES_GATEWAY_OWNER": f"telegram:{OWNER}",
    }
    started: list[tuple[Runtime, Gateway]] = []
    try:
        started.append(await _replica(homes[0], env))
        await until(lambda: started[0][1].status["telegram"].connected, what="a polls")
        started.append(await _replica(homes[1], env))
        yield started
    finally:
        for runtime, gw in started:
            await gw.stop()
            await runtime.aclose()


def _polling(replicas: list[tuple[Runtime, Gateway]]) -> list[int]:
    return [i for i, (_, gw) in enumerate(replicas) if gw.status["telegram"].connected]


async def _watch(replicas: list[tuple[Runtime, Gateway]], seen: list[list[int]]) -> None:
    while True:
        seen.append(_polling(replicas))
        await asyncio.sleep(0.005)


async def test_one_poller_at_a_time_and_a_takeover_within_the_lease(
    two: list[tuple[Runtime, Gateway]], tg: TelegramBotAPI, fake: FakeModel
) -> None:
    (runtime_a, a), (_, b) = two
    seen: list[list[int]] = []
    watcher = asyncio.get_running_loop().create_task(_watch(two, seen))
    try:
        fake.default = Text("one answer")
        await asyncio.sleep(TTL + 1)  # b stands by for over a lease period
        assert b.status["telegram"].state == "standby"
        await tg.user_says(OWNER, "first")
        await tg.wait_for_sent(1)
        assert (a.status["telegram"].messages_in, b.status["telegram"].messages_in) == (1, 0)

        # a dies: its polling stops, its lease is neither renewed nor released
        runtime_a.store.release_lock = lambda name, holder: None  # type: ignore[method-assign]
        died = time.monotonic()
        await a.stop()
        await until(lambda: b.status["telegram"].connected, within=5 * TTL, what="b takes over")
        took = time.monotonic() - died
        assert took <= TTL + TTL / 5 + 0.5, f"takeover took {took:.2f} s"

        await tg.user_says(OWNER, "second")
        await tg.wait_for_sent(2)
        await asyncio.sleep(0.3)  # a duplicate answer would arrive here
        assert texts(tg) == ["one answer", "one answer"]
        assert (a.status["telegram"].messages_in, b.status["telegram"].messages_in) == (1, 1)
    finally:
        watcher.cancel()
    assert seen and all(len(polling) <= 1 for polling in seen)
    assert [0] in seen and [1] in seen


async def test_a_message_redelivered_to_the_other_replica_is_answered_once(
    two: list[tuple[Runtime, Gateway]], fake: FakeModel
) -> None:
    """A webhook retried to another replica (or an update polled again after a takeover)
    carries the same message id: the store's inbound key lets one replica answer it."""
    from hermes.gateway.base import Inbound

    fake.default = Text("once")
    (_, a), (_, b) = two
    msg = Inbound(
        platform="telegram", chat=str(OWNER), sender=str(OWNER), text="hello", message_id="77"
    )
    assert await a._first_time(msg)
    assert not await b._first_time(msg)
    assert not await a._first_time(msg)


def test_an_sms_stop_on_one_replica_silences_every_replica(pg_url: str, homes: list[Path]) -> None:
    """SMS webhooks reach any replica: a STOP recorded by one is honoured by the other."""
    from hermes.gateway.platforms.sms import OptOuts
    from hermes.store import open_store

    one, two = open_store(pg_url), open_store(pg_url)
    try:
        a, b = OptOuts(homes[0], one.documents), OptOuts(homes[1], two.documents)
        a.set("+15550001", True)
        assert b.has("+15550001") and not b.has("+15550002")
        b.set("+15550001", False)
        assert not a.has("+15550001")
        assert not (homes[0] / "gateway").exists() and not (homes[1] / "gateway").exists()
    finally:
        one.close()
        two.close()
