"""Cron test helpers: an injectable clock, job stores, a scheduler, and a fake webhook receiver."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hermes.config.settings import Settings
from hermes.cron.schedule import resolve_timezone
from hermes.cron.store import JobStore
from hermes.cron.ticker import Scheduler
from hermes.runtime import Runtime

# A Monday morning, far enough ahead that real-clock checks never interfere.
T0 = datetime(2030, 1, 7, 8, 0, tzinfo=UTC)


class Clock:
    """A settable 'now' for the scheduler and stores: schedules never need sleeping."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(settings: Settings, clock: Clock) -> JobStore:
    return JobStore(settings.home, "default", resolve_timezone(settings.timezone), clock=clock)


@pytest.fixture
async def scheduler(runtime: Runtime, clock: Clock) -> AsyncIterator[Scheduler]:
    sched = Scheduler(runtime.agent, clock=clock, retry_delays=(0.0, 0.0))
    try:
        yield sched
    finally:
        await sched.stop()


def read_jobs(home: Path, scope_dir: Path | None = None) -> list[dict[str, Any]]:
    path = (scope_dir or home) / "cron" / "jobs.json"
    return json.loads(path.read_text(encoding="utf-8"))["jobs"]


def outputs(root: Path, job_id: str) -> list[Path]:
    folder = root / "cron" / "output" / job_id
    return sorted(folder.glob("*.md")) if folder.is_dir() else []


class Webhook:
    """A loopback HTTP receiver that answers with scripted statuses (then 200)."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.bodies: list[dict[str, Any]] = []
        self.hosts: list[str] = []
        self.attempts = 0
        self._lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with hook._lock:
                    hook.attempts += 1
                    hook.hosts.append(self.headers.get("host", ""))
                    status = hook.statuses.pop(0) if hook.statuses else 200
                    if status == 200:
                        hook.bodies.append(body)
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook(settings: Settings) -> Iterator[Webhook]:
    """A receiver on loopback, so the settings allow private webhook destinations."""
    settings.cron.webhook_allow_private = True
    hook = Webhook()
    try:
        yield hook
    finally:
        hook.close()
