"""At most once per slot across processes: racing tickers, and a crash between claim and finish."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from hermes.config.settings import Settings
from hermes.cron.jobs import create_job
from hermes.cron.store import JobStore
from hermes.testing.fake_model import FakeModel, Hang, Text
from tests.conftest import run_cli
from tests.cron.conftest import T0, outputs, read_jobs
from tests.cron.proc_helpers import tick_after_barrier


def make_due(store: JobStore, count: int) -> list[str]:
    ids = [
        create_job(store, schedule="every 1h", prompt=f"job {n}", name=f"job{n}")["id"]
        for n in range(count)
    ]
    data = json.loads(store.path.read_text())
    past = (datetime.now(UTC) - timedelta(minutes=5)).isoformat(timespec="seconds")
    for job in data["jobs"]:
        job["next_run_at"] = past
    store.path.write_text(json.dumps(data))
    return ids


def test_two_ticker_processes_racing_run_each_due_job_once(
    settings: Settings, fake: FakeModel, store: JobStore
) -> None:
    fake.default = Text("ran")
    ids = [
        create_job(store, schedule="every 1h", prompt=f"job {n}", name=f"job{n}")["id"]
        for n in range(6)
    ]
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    due_at = (T0 + timedelta(hours=1)).isoformat()
    procs = [
        ctx.Process(
            target=tick_after_barrier,
            args=(str(settings.home), fake.base_url, due_at, barrier, out),
        )
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    ran = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert sorted(ran[0] + ran[1]) == sorted(ids)  # every job once, none twice
    assert len(fake.chat_requests()) == 6
    for job in read_jobs(settings.home):
        assert job["repeat"]["completed"] == 1 and job["last_status"] == "ok"
        assert len(outputs(settings.home, job["id"])) == 1


def test_two_cli_ticks_at_once_run_a_due_job_once(
    model_env: dict, settings: Settings, fake: FakeModel
) -> None:
    fake.default = Hang(0.3, Text("ran"))
    store = JobStore(settings.home, "default", UTC)
    [job_id] = make_due(store, 1)
    cmd = [sys.executable, "-m", "hermes", "cron", "tick"]
    procs = [
        subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    ran = [line for out, _ in outs for line in out.splitlines() if line.startswith(job_id)]
    assert len(ran) == 1, outs
    assert len(fake.chat_requests()) == 1
    assert len(outputs(settings.home, job_id)) == 1


def test_a_crash_between_claim_and_finish_does_not_rerun_the_slot(
    model_env: dict, settings: Settings, fake: FakeModel
) -> None:
    fake.default = Hang(60)
    store = JobStore(settings.home, "default", UTC)
    [job_id] = make_due(store, 1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "cron", "tick"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    try:
        deadline = time.monotonic() + 30
        while not fake.chat_requests():  # the run's model call is in flight
            assert time.monotonic() < deadline and proc.poll() is None, "the tick never ran"
            time.sleep(0.02)
        [claimed] = read_jobs(settings.home)
        assert claimed["run_claim"]["kind"] == "scheduled"
        assert datetime.fromisoformat(claimed["next_run_at"]) > datetime.now(UTC)
    finally:
        proc.kill()
        proc.communicate()
    fake.default = Text("must not run")
    result = run_cli("cron", "tick")
    assert result.returncode == 0, result.stderr
    assert "no jobs were due" in result.stdout
    assert len(fake.chat_requests()) == 1
    [job] = read_jobs(settings.home)
    assert "run_claim" not in job and job["last_status"] == "error"
    assert "interrupted" in job["last_error"] and job["repeat"]["completed"] == 1
    listing = run_cli("cron", "list")
    assert "interrupted" in listing.stdout
