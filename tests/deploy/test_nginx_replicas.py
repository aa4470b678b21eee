"""A real deployment: nginx in front of three `hermes serve` replicas sharing one PostgreSQL.

32 clients talk through nginx, each its own session (X-Hermes-Session-Id, which nginx hashes
to a replica). Mid-load one replica is killed with SIGKILL and started again on its port.
What must hold: every acknowledged turn is stored exactly once and in order (a turn in
flight on the dead replica is stored whole or not at all), the dead replica's sessions
continue on the survivors, clients see only retriable errors (502/503 or a broken
connection) and only for requests in flight, and cron slots created during the load run once.
Every replica has the same Telegram bot configured (the Telegram stand-in): the victim is the
replica polling it, and the stand-in sees one poller at a time — a getUpdates from one
process never overlaps another live process's — with another process polling after the kill.
Skipped when nginx is not installed (scripts/test installs it on Debian).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes import tls
from hermes.store import open_store
from hermes.testing.fake_model import FakeModel, Hang, Text
from tests.standins.nginx import Nginx, find_nginx, free_port
from tests.standins.telegram_api import TelegramBotAPI

pytestmark = pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")

CLIENTS = 32
REPLICAS = 3
CONFIG = "memory:\n  review_interval: 0\ncron:\n  tick_seconds: 0.2\n"
RETRIABLE = {502, 503}


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"]) if users else ""


def _answer(body: dict[str, Any]) -> Hang:
    # a short think (for the non-streamed calls the turns make too), so that every replica
    # has turns in flight when one is killed
    return Hang(0.2, then=Text(f"ok: {_last_user(body)}"))


@dataclass
class Replica:
    """One `hermes serve` on a fixed port (a restart comes back where nginx expects it)."""

    home: Path
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def spawn(self) -> None:
        log = (self.home / "serve.log").open("ab")  # a file, never a pipe nobody drains
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "serve", "--port", str(self.port)],
            env={**os.environ, **self.env},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()

    async def ready(self) -> None:
        deadline = time.monotonic() + 40
        async with httpx.AsyncClient(verify=tls.httpx_context(), timeout=2) as http:
            while time.monotonic() < deadline:
                assert self.proc is not None and self.proc.poll() is None, self.log()
                try:
                    if (await http.get(f"http://127.0.0.1:{self.port}/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        raise AssertionError(f"replica on {self.port} not healthy:\n{self.log()}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # again is harmless: see the fixture
            try:  # a clean shutdown is not what this test is about: do not wait long for it
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self) -> str:
        return (self.home / "serve.log").read_text(errors="replace")[-3000:]


@pytest.fixture
async def tg() -> AsyncIterator[TelegramBotAPI]:
    async with TelegramBotAPI() as api:
        yield api


def _socket_owner(port: int, server_port: int, pids: dict[int, str]) -> str:
    """Which of `pids` holds the loopback TCP connection from `port` to `server_port`
    (the socket's inode from /proc/net/tcp, then the processes' file descriptors)."""
    inode = ""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1].split(":")[1], fields[2].split(":")[1]
        if int(local, 16) == port and int(remote, 16) == server_port:
            inode = fields[9]
            break
    for pid, name in pids.items():
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                        return name
    return "unknown"


def _identify_replicas(tg: TelegramBotAPI, replicas: list[Replica]) -> None:
    """The stand-in names each getUpdates caller `<replica index>:<pid>`."""

    def identify(request: Any) -> str:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        pids = {
            r.proc.pid: f"{n}:{r.proc.pid}"
            for n, r in enumerate(replicas)
            if r.proc is not None and r.proc.poll() is None
        }
        return _socket_owner(peer[1], tg.port, pids) if peer else "unknown"

    tg.identify = identify


@pytest.fixture
def replicas(
    pg_url: str, fake: FakeModel, tmp_path: Path, tg: TelegramBotAPI
) -> Iterator[list[Replica]]:
    fake.default = _answer
    started: list[Replica] = []
    try:
        for n in range(REPLICAS):
            home = tmp_path / f"replica-{n}"
            home.mkdir()
            (home / "config.yaml").write_text(CONFIG)
            env = {
                "HERMES_HOME": str(home),
                "HERMES_DATABASE_URL": pg_url,
                "OPENAI_BASE_URL": fake.base_url,
                "HERMES_MODEL": "fake-model",
                "HERMES_EMBEDDINGS": "off",
                "TELEGRAM_BOT_TOKEN": tg.state.token,
                "TELEGRAM_API_BASE": tg.base_url,
            }
            replica = Replica(home, env)
            replica.spawn()
            started.append(replica)
        yield started
    finally:
        for replica in started:  # all at once: each shutdown waits on its own
            if replica.proc is not None and replica.proc.poll() is None:
                replica.proc.send_signal(signal.SIGTERM)
        for replica in started:
            replica.stop()


@dataclass
class Client:
    """One user: turns sent in order, what each got back."""

    session: str
    sent: list[str] = field(default_factory=list)
    acked: list[tuple[str, float]] = field(default_factory=list)  # (text, when answered)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (text, status or exception)


async def _talk(base: str, client: Client, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(verify=tls.httpx_context(), base_url=base, timeout=30) as http:
        turn = 0
        while not stop.is_set():
            text = f"{client.session} turn {turn}"
            turn += 1
            client.sent.append(text)
            try:
                r = await http.post(
                    "/v1/chat/completions",
                    json={"model": "hermes", "messages": [{"role": "user", "content": text}]},
                    headers={"X-Hermes-Session-Id": client.session},
                )
            except httpx.TransportError as exc:
                client.errors.append((text, type(exc).__name__))
                await asyncio.sleep(0.05)
                continue
            if r.status_code == 200:
                assert r.json()["choices"][0]["message"]["content"] == f"ok: {text}"
                client.acked.append((text, time.monotonic()))
            else:
                client.errors.append((text, str(r.status_code)))
                await asyncio.sleep(0.05)


async def _add_job(base: str, name: str, due_in: float) -> str:
    when = (datetime.now(UTC) + timedelta(seconds=due_in)).isoformat(timespec="seconds")
    async with httpx.AsyncClient(verify=tls.httpx_context(), base_url=base, timeout=30) as http:
        for _ in range(5):  # a 502 here is the kill's, and a job POST is safe to repeat once
            r = await http.post(
                "/api/jobs", json={"name": name, "schedule": when, "prompt": f"cron {name}"}
            )
            if r.status_code == 201:
                return str(r.json()["job"]["id"])
            assert r.status_code in RETRIABLE, r.text
            await asyncio.sleep(0.2)
    raise AssertionError(f"could not create job {name}")


async def _job(base: str, job_id: str) -> dict[str, Any]:
    async with httpx.AsyncClient(verify=tls.httpx_context(), base_url=base, timeout=30) as http:
        r = await http.get(f"/api/jobs/{job_id}")
        return dict(r.json()["job"]) if r.status_code == 200 else {}


async def test_nginx_three_replicas_one_killed_mid_load(
    replicas: list[Replica], fake: FakeModel, pg_url: str, tmp_path: Path, tg: TelegramBotAPI
) -> None:
    _identify_replicas(tg, replicas)
    await asyncio.gather(*(r.ready() for r in replicas))
    lb_dir = tmp_path / "nginx"
    lb_dir.mkdir()
    with Nginx(lb_dir, [f"127.0.0.1:{r.port}" for r in replicas]) as lb:
        clients = [Client(f"c{n}") for n in range(CLIENTS)]
        stop = asyncio.Event()
        talking = [asyncio.ensure_future(_talk(lb.base_url, c, stop)) for c in clients]
        jobs: list[str] = []
        try:
            await asyncio.sleep(1.0)
            jobs.append(await _add_job(lb.base_url, "before", due_in=1.5))
            await asyncio.sleep(3.0)
            pollers = [p.who for p in tg.polls if p.ended is None]
            assert len(pollers) == 1, tg.polls  # the bot is polled, by one replica
            victim = replicas[int(pollers[0].split(":")[0])]
            killed_at = time.monotonic()
            victim.kill()
            await asyncio.sleep(1.5)  # the survivors carry the load alone
            victim.spawn()
            await victim.ready()
            back_at = time.monotonic()
            jobs.append(await _add_job(lb.base_url, "after", due_in=1.5))
            await asyncio.sleep(2.5)
            jobs.append(await _add_job(lb.base_url, "later", due_in=1.5))
            await asyncio.sleep(2.5)
        finally:
            stop.set()
            await asyncio.gather(*talking)
        deadline = time.monotonic() + 15
        states: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            states = [await _job(lb.base_url, j) for j in jobs]
            if all(s.get("last_status") for s in states):
                break
            await asyncio.sleep(0.2)
        # a slot whose run the kill interrupted is closed as such and never run again
        interrupted = {
            s["name"]
            for s in states
            if s.get("last_status") == "error" and "interrupted" in (s.get("last_error") or "")
        }
        assert all(s.get("last_status") == "ok" or s["name"] in interrupted for s in states), states
        await asyncio.sleep(1.0)  # a second claim of a slot would have run within five ticks

    # the bot was polled by one process at a time, and by another one after the kill
    assert tg.overlaps == [], tg.overlaps
    after = {p.who for p in tg.polls if p.began > killed_at}
    assert after and all(who != "unknown" for who in after), tg.polls
    assert not after & {p.who for p in tg.polls if p.began < killed_at}, tg.polls

    # clients saw only retriable errors (how many depends on what was in flight on the victim
    # at the kill, which nginx may also have retried elsewhere), and the load went on across it
    errors = [e for c in clients for _, e in c.errors]
    assert all(e in {"502", "503"} or e.endswith("Error") for e in errors), errors
    acked_at = [when for c in clients for _, when in c.acked]
    assert any(when < killed_at for when in acked_at), "no turn before the kill"
    assert any(killed_at < when < back_at for when in acked_at), "no turn while it was down"
    assert sum(len(c.acked) for c in clients) > 3 * CLIENTS

    store = open_store(pg_url)
    try:
        for c in clients:
            stored = store.get_messages("default", c.session)
            users = [m.content for m in stored if m.role == "user"]
            # every user message is answered right after it: nothing half-written
            assert [(m.role, m.content) for m in stored] == [
                pair for u in users for pair in (("user", u), ("assistant", f"ok: {u}"))
            ], c.session
            assert len(users) == len(set(users)), f"{c.session}: a turn stored twice"
            order = {text: i for i, text in enumerate(c.sent)}
            assert [order[u] for u in users] == sorted(order[u] for u in users), c.session
            acked = {t for t, _ in c.acked}
            assert acked <= set(users), f"{c.session}: acknowledged turns missing"
            assert set(users) - acked <= {t for t, _ in c.errors}  # only in-flight ones extra
            # the session went on after the kill: on a survivor, or on the restarted replica
            assert any(killed_at < at for _, at in c.acked), f"{c.session} stopped"
        moved = [c for c in clients if any(killed_at < at < back_at for _, at in c.acked)]
        assert len(moved) == CLIENTS, "some sessions waited for the dead replica"

        # each cron slot ran once: one model call and one cron session per job (at most one
        # for a slot the kill interrupted)
        for name in ("before", "after", "later"):
            calls = [b for b in fake.chat_requests() if _last_user(b).endswith(f"cron {name}")]
            assert len(calls) == 1 or (name in interrupted and len(calls) <= 1), (name, calls)
        cron = store.list_sessions("default", source="cron")
        assert len(jobs) - len(interrupted) <= len(cron) <= len(jobs)
    finally:
        store.close()
