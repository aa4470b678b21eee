"""Cost of one cron tick with 10,000 jobs when none is due (target: under 50 ms).

    .venv/bin/python bench/cron_tick.py [--jobs 10000] [--rounds 20]

Scenarios:
  warm         the steady state inside `hermes serve`: jobs.json unchanged since the last tick
  cold         a fresh process (`hermes cron tick`): jobs.json read and parsed once
  changed      a job was edited since the last tick (file re-read, nothing due)
  claim        one job is due: the cost of claiming it (the run itself is not measured)
  100 scopes   the same 10,000 jobs spread over 100 user scopes, warm
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hermes.config.settings import load_settings
from hermes.cron.jobs import create_job
from hermes.cron.schedule import first_run, parse_schedule, to_iso
from hermes.cron.store import JobStore, atomic_write, jobs_path, new_job_id
from hermes.cron.ticker import Scheduler
from hermes.runtime import build_runtime
from hermes.store.base import DEFAULT_SCOPE

SCHEDULES = ["0 9 * * 1-5", "every 30m", "daily at 7am", "every 2h", "weekends at 10am"]


def make_jobs(count: int, now: datetime, store: JobStore) -> list[dict]:
    """Realistic records (the shape create_job writes), all due in the future."""
    template = create_job(store, schedule="every 1h", prompt="template", name="template")
    jobs = []
    for i in range(count):
        schedule = parse_schedule(SCHEDULES[i % len(SCHEDULES)], now=now, tz=UTC)
        upcoming = first_run(schedule, now=now, tz=UTC) + timedelta(minutes=i % 600)
        jobs.append(
            {
                **template,
                "id": new_job_id(),
                "name": f"job {i}",
                "prompt": f"Do task number {i} and report back briefly.",
                "schedule": schedule,
                "schedule_display": schedule["display"],
                "next_run_at": to_iso(upcoming, UTC),
            }
        )
    return jobs


def write_scope(home: Path, scope: str, jobs: list[dict], now: datetime) -> None:
    payload: dict = {"jobs": jobs, "updated_at": to_iso(now, UTC)}
    if scope != DEFAULT_SCOPE:
        payload["scope"] = scope
    atomic_write(jobs_path(home, scope), json.dumps(payload, indent=2).encode())


async def measure(scheduler: Scheduler, now: datetime, rounds: int, before=None) -> list[float]:
    times = []
    for _ in range(rounds):
        if before:
            before()
        start = time.perf_counter()
        ran = await scheduler.tick(now)
        times.append((time.perf_counter() - start) * 1000)
        assert ran == [], "a job ran: the benchmark expects none due"
    return times


async def run(count: int, rounds: int) -> list[tuple[str, int, int, list[float]]]:
    rows = []
    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        settings = load_settings(home, env={})
        runtime = build_runtime(settings)
        store = JobStore(home, DEFAULT_SCOPE, UTC, clock=lambda: now)
        jobs = make_jobs(count, now, store)
        write_scope(home, DEFAULT_SCOPE, jobs, now)
        size_mb = jobs_path(home, DEFAULT_SCOPE).stat().st_size / 1e6

        warm = Scheduler(runtime.agent, clock=lambda: now)
        await warm.tick(now)
        rows.append(("warm (serve, file unchanged)", count, 1, await measure(warm, now, rounds)))

        cold_times = []
        for _ in range(max(3, rounds // 4)):
            fresh = Scheduler(runtime.agent, clock=lambda: now)
            cold_times += await measure(fresh, now, 1)
            await fresh.stop()
        rows.append((f"cold (fresh process, {size_mb:.1f} MB file)", count, 1, cold_times))

        path = jobs_path(home, DEFAULT_SCOPE)

        def touch() -> None:
            path.touch()  # a new mtime, as after an edit

        rows.append(
            (
                "changed (file edited since last tick)",
                count,
                1,
                await measure(warm, now, max(3, rounds // 4), before=touch),
            )
        )
        due_times = []
        for n in range(max(3, rounds // 4)):
            jobs[n]["next_run_at"] = to_iso(now - timedelta(minutes=1), UTC)
            write_scope(home, DEFAULT_SCOPE, jobs, now)
            start = time.perf_counter()
            claimed = warm._claim_all(now)  # the claim only: lock, parse, save (no model call)
            due_times.append((time.perf_counter() - start) * 1000)
            assert len(claimed) == 1
            jobs[n]["next_run_at"] = to_iso(now + timedelta(days=1), UTC)
        rows.append(("claim 1 due job (lock+parse+save, no run)", count, 1, due_times))
        await warm.stop()

        write_scope(home, DEFAULT_SCOPE, [], now)
        per = count // 100
        for n in range(100):
            write_scope(home, f"user:u{n}", jobs[n * per : (n + 1) * per], now)
        spread = Scheduler(runtime.agent, clock=lambda: now)
        await spread.tick(now)
        rows.append(("warm, 100 user scopes", count, 101, await measure(spread, now, rounds)))
        await spread.stop()
        await runtime.aclose()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    rows = asyncio.run(run(args.jobs, args.rounds))
    print(
        f"{'scenario':<42} {'jobs':>6} {'files':>5} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}"
    )
    for name, jobs, files, times in rows:
        ordered = sorted(times)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        print(
            f"{name:<42} {jobs:>6} {files:>5} {statistics.median(times):>10.2f} "
            f"{p95:>8.2f} {max(times):>8.2f}"
        )
    print("target: one tick with 10,000 jobs, none due, under 50 ms")


if __name__ == "__main__":
    main()
