"""A lone turn's store writes run on the event loop's own thread (`GroupCommit.run(here=True)`,
`SQLiteStore.write_here`): only when no other turn is in progress, nothing is queued and the
store is free; otherwise, and whenever waiting would be needed, the writer thread takes them
as before. The loop never waits for a lock, and the search index still catches up."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.locks import SessionLocks, settle
from hermes.store import index_backlog
from hermes.store.base import NewMessage
from hermes.store.search_catchup import waiting
from hermes.store.sqlite import SQLiteStore


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    s = SQLiteStore(tmp_path / "state.db")
    yield s
    s.close()


def said(text: str) -> list[NewMessage]:
    return [NewMessage(role="user", content=text), NewMessage(role="assistant", content="ok")]


class ThreadLog:
    """Wraps store methods to note the thread each call ran on."""

    def __init__(self, store: SQLiteStore, *names: str) -> None:
        self.calls: list[tuple[str, str]] = []
        for name in names:
            setattr(store, name, self._wrap(name, getattr(store, name)))

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def noted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, threading.current_thread().name))
            return method(*args, **kwargs)

        return noted

    def threads(self, name: str) -> set[str]:
        return {thread for called, thread in self.calls if called == name}


async def test_a_lone_turn_writes_on_the_loop_thread(store: SQLiteStore) -> None:
    log = ThreadLog(store, "begin_turn", "append_messages")
    locks = SessionLocks(store)
    loop_thread = threading.current_thread().name
    for turn in range(3):
        async with locks.hold("default", "s", source="api") as held:
            assert locks.alone
            await settle(
                store,
                lambda turn=turn, lease=held.lease: store.append_messages(
                    "default", "s", said(f"turn {turn}"), release=lease
                ),
                here=locks.alone,
            )
            held.released = True
    assert log.threads("begin_turn") == {loop_thread}
    assert log.threads("append_messages") == {loop_thread}
    assert [m.content for m in store.get_messages("default", "s")][::2] == [
        "turn 0",
        "turn 1",
        "turn 2",
    ]


async def test_while_another_turn_is_in_progress_writes_go_to_the_writer(
    store: SQLiteStore,
) -> None:
    log = ThreadLog(store, "begin_turn")
    locks = SessionLocks(store)
    inside, finish = asyncio.Event(), asyncio.Event()

    async def long_turn() -> None:
        async with locks.hold("default", "a", source="api"):
            inside.set()
            await finish.wait()

    first = asyncio.ensure_future(long_turn())
    await inside.wait()
    async with locks.hold("default", "b", source="api"):
        assert not locks.alone
    finish.set()
    await first
    assert locks.alone
    assert [thread for _, thread in log.calls] == [
        threading.current_thread().name,
        "hermes-store-writer",
    ]


async def test_a_call_queued_before_runs_first_on_the_writer(store: SQLiteStore) -> None:
    """Calls keep their order: with one queued, a `here` call queues behind it."""
    store.ensure_session("default", "s", source="api")
    gate = threading.Event()
    group = store.group_commit
    order: list[str] = []

    def slow() -> None:
        gate.wait(10)
        order.append("queued")

    first = asyncio.ensure_future(group.run(slow))
    await asyncio.sleep(0.05)  # the writer holds `slow`
    blocked = asyncio.ensure_future(group.run(lambda: order.append("second")))
    await asyncio.sleep(0)
    later = asyncio.ensure_future(
        group.run(lambda: order.append("here") or threading.current_thread().name, here=True)
    )
    await asyncio.sleep(0.05)
    assert order == []
    gate.set()
    await asyncio.gather(first, blocked)
    assert await later == "hermes-store-writer"
    assert order == ["queued", "second", "here"]


async def test_a_store_held_by_another_thread_is_not_waited_for_on_the_loop(
    store: SQLiteStore,
) -> None:
    store.ensure_session("default", "s", source="api")
    taken, release = threading.Event(), threading.Event()

    def hold_the_store() -> None:
        with store.lock:
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=hold_the_store)
    holder.start()
    taken.wait(10)
    assert store.write_here(lambda: store.append_messages("default", "s", said("x"))) is None
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    ticking = asyncio.ensure_future(ticker())
    write = asyncio.ensure_future(
        store.group_commit.run(
            lambda: store.append_messages("default", "s", said("waited")), here=True
        )
    )
    await asyncio.sleep(0.1)
    assert not write.done() and ticks > 5  # the writer waits; the loop goes on
    release.set()
    await write
    ticking.cancel()
    holder.join()
    assert [m.content for m in store.get_messages("default", "s")] == ["waited", "ok"]


async def test_another_process_holding_the_database_is_not_waited_for_on_the_loop(
    store: SQLiteStore,
) -> None:
    """Another connection's write transaction (another process's, as SQLite sees it): the
    loop's attempt gives up at once, changing nothing, and the writer waits it out."""
    store.ensure_session("default", "s", source="api")
    other = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        assert store.write_here(lambda: store.append_messages("default", "s", said("x"))) is None
        assert time.monotonic() - started < 1.0
        write = asyncio.ensure_future(
            store.group_commit.run(
                lambda: store.append_messages("default", "s", said("after")), here=True
            )
        )
        await asyncio.sleep(0.2)
        assert not write.done()
    finally:
        other.execute("COMMIT")
        other.close()
    await write
    assert [m.content for m in store.get_messages("default", "s")] == ["after", "ok"]
    # the store's own patience is back for everything else
    assert store.connection.execute("PRAGMA busy_timeout").fetchone()[0] == 5000


async def test_an_error_raised_by_a_call_on_the_loop_reaches_the_caller(
    store: SQLiteStore,
) -> None:
    def broken() -> None:
        with store._write() as conn:
            conn.execute("INSERT INTO no_such_table VALUES (1)")

    with pytest.raises(sqlite3.OperationalError, match="no_such_table"):
        await store.group_commit.run(broken, here=True)
    assert not store.connection.in_transaction


async def write_on_the_loop(store: SQLiteStore, text: str) -> None:
    await store.group_commit.run(
        lambda: store.append_messages("default", "s", said(text)), here=True
    )


async def indexed(store: SQLiteStore) -> None:
    """Wait until the search index holds every message (no search runs meanwhile)."""
    deadline = time.monotonic() + 10
    while True:
        with store.lock:
            mark, last = waiting(store.connection)
        if mark == last:
            return
        assert time.monotonic() < deadline, f"still waiting: mark {mark} of {last}"
        await asyncio.sleep(0.05)


async def test_messages_written_on_the_loop_are_indexed_by_the_idle_writer(
    store: SQLiteStore,
) -> None:
    """With every write on the loop, the writer thread is never woken by a queued call: it
    must still be told that messages wait, and index them without any search."""
    store.ensure_session("default", "s", source="api")
    log = ThreadLog(store, "append_messages")
    for i in range(3):
        await write_on_the_loop(store, f"m {i}")
    assert log.threads("append_messages") == {threading.current_thread().name}
    await indexed(store)


async def test_a_due_piece_is_indexed_at_once_not_at_the_writers_deadline(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer sleeps until the oldest waiting message is due; enough messages written on
    the loop make a piece due now, and the writer is woken for it (small pieces, often)."""
    monkeypatch.setattr(index_backlog, "DUE_AFTER_S", 60.0)
    store.ensure_session("default", "s", source="api")

    await write_on_the_loop(store, "m 0")  # the writer now sleeps until a minute from now
    await asyncio.sleep(0.05)
    for i in range(1, index_backlog.DUE_AT // 2 + 1):
        await write_on_the_loop(store, f"m {i}")
    await indexed(store)
