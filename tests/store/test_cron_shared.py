"""Cron on a shared PostgreSQL database: jobs live in the database, and two schedulers (two
replicas' runtimes) ticking at once run each slot exactly once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from typer.testing import CliRunner

from hermes.cli.main import app
from hermes.config.settings import Settings, load_settings
from hermes.cron.jobs import create_job
from hermes.cron.schedule import resolve_timezone
from hermes.cron.store import JobStore
from hermes.cron.ticker import Scheduler
from hermes.runtime import Runtime, build_runtime
from hermes.testing.fake_model import FakeModel, Text
from tests.cron.conftest import Clock


@pytest.fixture
def pg_settings(
    pg_url: str, model_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Settings:
    monkeypatch.setenv("HERMES_DATABASE_URL", pg_url)
    s = load_settings()
    s.model.max_retries = 0
    return s


@pytest.fixture
async def replicas(pg_settings: Settings) -> AsyncIterator[list[Runtime]]:
    runtimes = [build_runtime(pg_settings), build_runtime(pg_settings)]
    try:
        yield runtimes
    finally:
        for rt in runtimes:
            await rt.aclose()


async def test_two_tickers_run_each_slot_once(
    replicas: list[Runtime], fake: FakeModel, pg_settings: Settings
) -> None:
    fake.default = Text("done")
    clock = Clock()
    tz = resolve_timezone(pg_settings.timezone)
    schedulers = [Scheduler(rt.agent, clock=clock, retry_delays=(0.0,)) for rt in replicas]
    store = JobStore(
        pg_settings.home, "default", tz, clock=clock, documents=schedulers[0].documents
    )
    job = create_job(store, schedule="every 1h", prompt="report", name="hourly")
    assert not (pg_settings.home / "cron" / "jobs.json").exists()  # it lives in the database
    try:
        runs = []
        for _ in range(3):  # three slots, both replicas ticking each time (some twice)
            clock.advance(hours=1)
            results = await asyncio.gather(*(s.tick() for s in schedulers * 2))
            runs.extend(r for batch in results for r in batch)
        assert [r.status for r in runs] == ["ok"] * 3
        assert len(fake.chat_requests()) == 3
        other = JobStore(
            pg_settings.home, "default", tz, clock=clock, documents=schedulers[1].documents
        )
        [saved] = other.load()
        assert saved["id"] == job["id"] and saved["repeat"]["completed"] == 3
        assert saved["last_status"] == "ok" and "run_claim" not in saved
    finally:
        for s in schedulers:
            await s.stop()


async def test_jobs_from_the_cli_are_seen_by_every_replica(
    replicas: list[Runtime], pg_settings: Settings
) -> None:
    result = CliRunner().invoke(
        app, ["cron", "add", "every 2h", "check the news", "--name", "news"]
    )
    assert result.exit_code == 0, result.output
    listed = CliRunner().invoke(app, ["cron", "list", "--json"])
    assert [j["name"] for j in json.loads(listed.output)] == ["news"]
    tz = resolve_timezone(pg_settings.timezone)
    for rt in replicas:
        store = JobStore(pg_settings.home, "default", tz, documents=rt.store.documents)
        [job] = store.load()
        assert job["name"] == "news" and job["schedule"]["minutes"] == 120
