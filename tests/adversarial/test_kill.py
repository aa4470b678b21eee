"""Killed processes: a dead holder's session lease is taken over at once, and requests that
wait for a busy session never hold a shutdown up."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hermes.agent.locks import SessionLocks, ShuttingDownError
from hermes.agent.turn import TurnRequest
from hermes.runtime import Runtime
from hermes.store.leases import _start_ticks, holder_is_dead, new_holder
from hermes.store.sqlite import SQLiteStore
from hermes.testing.fake_model import FakeModel, Hang, Text
from tests.server.test_serve import hermes_serve
from tests.store_edits import take_lease

LEASE = "session:default:s1"


def _holder_of(pid: int) -> str:
    """The holder name process `pid` would write (same host, its start time)."""
    prefix = new_holder().rsplit(":", 3)[0]  # hermes:<host>
    return f"{prefix}:{pid}:{_start_ticks(pid) or '0'}:deadbeef"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _turn(session: str = "s1") -> TurnRequest:
    return TurnRequest(user_message="hi", session_id=session, scope="default", source="api")


async def test_a_dead_local_holder_is_taken_over_at_once(
    runtime: Runtime, fake: FakeModel, home: Path
) -> None:
    other = SQLiteStore(home / "state.db")
    try:
        dead = _holder_of(_dead_pid())
        assert holder_is_dead(dead)
        assert take_lease(other, LEASE, dead, 900)
    finally:
        other.close()
    fake.enqueue(Text("taken over"))
    runtime.agent.locks = SessionLocks(runtime.store, wait_seconds=2)
    started = time.monotonic()
    result = await runtime.agent.run_turn(_turn())
    assert result.content == "taken over" and time.monotonic() - started < 2


def test_a_live_holder_still_blocks_and_a_reused_pid_does_not(home: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    store = SQLiteStore(home / "state.db")
    try:
        live = _holder_of(sleeper.pid)
        assert not holder_is_dead(live)
        host = live.split(":")[1]
        # this PID with another start time: the holder was an earlier process (PID reused)
        assert holder_is_dead(f"hermes:{host}:{sleeper.pid}:1:deadbeef")
        assert not holder_is_dead(new_holder())  # this very process
        assert take_lease(store, LEASE, live, 900)
        assert not take_lease(store, LEASE, new_holder(), 900)
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait()
        assert take_lease(store, LEASE, new_holder(), 900)
    finally:
        store.close()
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def test_another_hosts_holder_is_judged_by_its_short_expiry(home: Path) -> None:
    store = SQLiteStore(home / "state.db")
    try:
        remote = "hermes:some-other-host:4242:0:cafe0001"
        assert not holder_is_dead(remote)
        assert take_lease(store, LEASE, remote, 60)
        assert not take_lease(store, LEASE, new_holder(), 60)
        assert take_lease(store, "session:default:s2", remote, -1)  # expired
        assert take_lease(store, "session:default:s2", new_holder(), 60)
        assert not store.renew_lock("session:default:s2", remote, 60)  # lost: not re-taken
    finally:
        store.close()


async def test_close_makes_waiting_turns_give_up(runtime: Runtime) -> None:
    assert take_lease(runtime.store, LEASE, "hermes:some-other-host:1:0:x", 600)
    waiting = asyncio.create_task(runtime.agent.run_turn(_turn()))
    await asyncio.sleep(0.2)  # let it start polling (nothing to wait on: it is a poll loop)
    assert not waiting.done()
    runtime.agent.locks.close()
    with pytest.raises(ShuttingDownError):
        await asyncio.wait_for(waiting, 2)


@pytest.mark.usefixtures("model_env")
def test_kill_9_mid_turn_then_the_session_continues_at_once(fake: FakeModel, home: Path) -> None:
    fake.enqueue(Hang(30, then=Text("never delivered")))
    with hermes_serve() as (proc, base):
        thread = threading.Thread(target=_post, args=(base, "s1", {}), daemon=True)
        thread.start()
        _wait_for_chat(fake)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    fake.enqueue(Text("after the crash"))
    with hermes_serve() as (_proc, base):
        started = time.monotonic()
        r = httpx.post(
            f"{base}/v1/chat/completions",
            timeout=20,
            headers={"X-Hermes-Session-Id": "s1"},
            json={"model": "hermes", "messages": [{"role": "user", "content": "again"}]},
        )
        assert r.status_code == 200, r.text
        assert time.monotonic() - started < 5
    store = SQLiteStore(home / "state.db")
    try:  # the killed turn stored nothing half-written; the new one is whole
        assert [m.content for m in store.get_messages("default", "s1")] == [
            "again",
            "after the crash",
        ]
    finally:
        store.close()


@pytest.mark.usefixtures("model_env")
def test_sigterm_is_not_held_up_by_a_request_waiting_for_a_session(home: Path) -> None:
    with _verbose_serve() as (proc, base, lines):
        store = SQLiteStore(home / "state.db")
        try:
            assert take_lease(store, LEASE, "hermes:some-other-host:1:0:x", 600)
        finally:
            store.close()
        result: dict[str, httpx.Response] = {}
        thread = threading.Thread(target=_post, args=(base, "s1", result))
        thread.start()
        _wait_for_line(lines, "is busy in another Hermes process")  # the request is waiting
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        # held up, it would wait out the request's wait for the session (up to 10 minutes);
        # a clean stop takes a second or two, several on a loaded machine
        assert proc.wait(60) == 0
        assert time.monotonic() - started < 30
        thread.join(10)
    assert result["r"].status_code == 503
    assert result["r"].json()["error"]["code"] == "shutting_down"


@contextlib.contextmanager
def _verbose_serve() -> Iterator[tuple[subprocess.Popen[str], str, queue.Queue[str]]]:
    """`hermes -v serve` with its stderr read line by line by a thread of its own (the info
    lines say what the server is doing); yields it, its base URL and the lines after that."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "-v", "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    stream = proc.stderr
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True)
    reader.start()
    try:
        listening = _wait_for_line(lines, "listening on ")
        yield proc, listening.split("listening on ", 1)[1].split()[0], lines
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reader.join(10)  # to the end of its output
        stream.close()


def _wait_for_line(lines: queue.Queue[str], text: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if text in line:
            return line
    raise AssertionError(f"no line saying {text!r} within {timeout:g}s")


def _post(base: str, session: str, out: dict[str, httpx.Response]) -> None:
    try:
        out["r"] = httpx.post(
            f"{base}/v1/chat/completions",
            timeout=30,
            headers={"X-Hermes-Session-Id": session},
            json={"model": "hermes", "messages": [{"role": "user", "content": "go"}]},
        )
    except httpx.HTTPError:
        pass


def _wait_for_chat(fake: FakeModel, within: float = 10.0) -> None:
    """Poll (with a deadline) until the model has received a chat request."""
    deadline = time.monotonic() + within
    while not fake.chat_requests():
        assert time.monotonic() < deadline, "the model never received the turn"
        time.sleep(0.02)
