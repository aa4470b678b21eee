"""The cron ticker's health (`/health/detailed`'s `cron` part, issue 37's Status screen): off
where nothing ticks, ok while it ticks, and each way it fails quietly named with its fix."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hermes.config.settings import Settings
from hermes.cron import health
from hermes.cron.ticker import Scheduler
from hermes.runtime import Runtime
from tests.cron.conftest import Clock
from tests.server.conftest import open_api, wait_until


async def test_off_until_started_then_ok_after_a_tick(scheduler: Scheduler) -> None:
    assert health.ticker_health(scheduler, 60, True)["status"] == "off"
    assert health.ticker_health(scheduler, 60, False)["detail"] == "cron.enabled is false"
    scheduler.start()
    await wait_until(lambda: scheduler.ticked_at is not None, what="the first tick")
    report = health.ticker_health(scheduler, 60, True)
    assert report["status"] == "ok" and "every 60 s" in report["detail"], report
    await scheduler.stop()
    assert health.ticker_health(scheduler, 60, True)["status"] == "off"


async def test_a_failing_tick_is_an_error_with_its_fix(
    scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_disk(now: Any) -> Any:
        raise OSError("disk unreadable")

    monkeypatch.setattr(scheduler, "_claim_all", broken_disk)
    scheduler.start()
    await wait_until(lambda: scheduler.tick_error, what="the failed tick")
    report = health.ticker_health(scheduler, 60, True)
    assert report["status"] == "error" and "disk unreadable" in report["error"]
    assert "restart hermes serve" in report["fix"]


async def test_a_stalled_ticker_is_degraded(
    runtime: Runtime, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime.settings.cron.tick_seconds = 0.05
    scheduler = Scheduler(runtime.agent, clock=clock)
    release = threading.Event()
    ticks = 0

    def hangs_from_the_second_tick(now: Any) -> list[Any]:
        nonlocal ticks
        ticks += 1
        if ticks > 1:
            release.wait(10)  # a jobs file lock that is never given back
        return []

    monkeypatch.setattr(scheduler, "_claim_all", hangs_from_the_second_tick)
    monkeypatch.setattr(health, "STALL_GRACE_S", 0.0)
    scheduler.start()
    try:
        await wait_until(lambda: ticks > 1, what="the stalled tick")
        await wait_until(
            lambda: health.ticker_health(scheduler, 0.05, True)["status"] == "degraded",
            what="the stall to show",
        )
        assert "no cron tick for" in health.ticker_health(scheduler, 0.05, True)["reason"]
    finally:
        release.set()
        await scheduler.stop()


async def test_an_unreadable_jobs_file_is_named(scheduler: Scheduler, settings: Settings) -> None:
    jobs = settings.home / "cron" / "jobs.json"
    jobs.parent.mkdir(parents=True, exist_ok=True)
    jobs.write_text("{ this is not json", encoding="utf-8")
    scheduler.start()
    await wait_until(lambda: scheduler.ticked_at is not None, what="the first tick")
    report = health.ticker_health(scheduler, 60, True)
    assert report["status"] == "degraded", report
    assert report["reason"].startswith("1 jobs file(s) cannot be read")
    assert str(settings.home) not in str(report) and "cron tick skipped" in report["fix"]


async def test_health_detailed_has_the_cron_part(settings: Settings) -> None:
    async with open_api(settings) as api:
        scheduler = api.runtime.services.get(Scheduler)
        await wait_until(lambda: scheduler.ticked_at is not None, what="the first tick")
        body = (await api.client.get("/health/detailed")).json()
        assert body["parts"]["cron"]["status"] == "ok", body["parts"]["cron"]
        scheduler.tick_error = "OSError: disk unreadable"  # as the loop records a failure
        body = (await api.client.get("/health/detailed")).json()
        assert body["status"] == "degraded" and "disk unreadable" in body["reasons"]["cron"]
