"""Group commit (`hermes.store.group_commit`): the turns' writes queued while the writer was
busy share one transaction, run in the order they were queued, a write that fails is undone
alone, and no caller hears "done" for a write that was not committed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from hermes.store.base import Lease, NewMessage, StoreError
from hermes.store.group_commit import GroupCommit, Outcome
from hermes.store.sqlite import SQLiteStore


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    s = SQLiteStore(tmp_path / "state.db")
    yield s
    s.close()


def said(text: str) -> list[NewMessage]:
    return [NewMessage(role="user", content=text), NewMessage(role="assistant", content="ok")]


def contents(store: SQLiteStore, session: str) -> list[str | None]:
    return [m.content for m in store.get_messages("default", session)]


class Recording:
    """A batch writer that records each batch's calls and can hold the first one back."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.first_started = threading.Event()
        self.release_first = threading.Event()

    def __call__(self, calls: Sequence[Callable[[], Any]]) -> list[Outcome[Any]]:
        if not self.batches:
            self.first_started.set()
            self.release_first.wait(10)
        self.batches.append(len(calls))
        return [Outcome(call()) for call in calls]


async def test_calls_queued_while_the_writer_is_busy_share_one_batch_in_order() -> None:
    writer = Recording()
    group = GroupCommit(writer)
    ran: list[int] = []
    first = asyncio.ensure_future(group.run(lambda: ran.append(0) or 0))
    await asyncio.to_thread(writer.first_started.wait, 10)
    rest = [asyncio.ensure_future(group.run(lambda i=i: ran.append(i) or i)) for i in range(1, 6)]
    await asyncio.sleep(0)
    writer.release_first.set()
    assert await first == 0
    assert await asyncio.gather(*rest) == [1, 2, 3, 4, 5]
    assert ran == [0, 1, 2, 3, 4, 5]
    assert writer.batches == [1, 5]
    group.close()


async def test_a_closed_writer_refuses_new_calls() -> None:
    group = GroupCommit(Recording())
    group.close()
    with pytest.raises(RuntimeError):
        await group.run(lambda: 1)


def test_a_failing_write_is_undone_alone_and_the_others_are_kept(store: SQLiteStore) -> None:
    for sid in ("a", "b"):
        store.ensure_session("default", sid, source="api")
    broken = [NewMessage(role="user", content="half"), NewMessage(role=None, content="x")]  # type: ignore[arg-type]
    outcomes = store.write_together(
        [
            lambda: store.append_messages("default", "a", said("first")),
            lambda: store.append_messages("default", "b", broken),
            lambda: store.append_messages("default", "missing", said("nowhere")),
            lambda: store.append_messages("default", "a", said("second")),
        ]
    )
    assert [o.error is None for o in outcomes] == [True, False, False, True]
    assert isinstance(outcomes[2].error, StoreError)
    assert contents(store, "a") == ["first", "ok", "second", "ok"]
    assert [r.index for r in outcomes[3].value] == [2, 3]
    assert contents(store, "b") == []  # the first message of the failed write went too
    assert store.get_session("default", "b").message_count == 0  # type: ignore[union-attr]


class Abort(BaseException):
    """Stands for the process being torn down in the middle of a batch."""


def test_a_batch_that_is_abandoned_midway_keeps_nothing(store: SQLiteStore) -> None:
    store.ensure_session("default", "a", source="api")
    store.append_messages("default", "a", said("before"))

    def abort() -> None:
        raise Abort

    with pytest.raises(Abort):
        store.write_together([lambda: store.append_messages("default", "a", said("lost")), abort])
    assert contents(store, "a") == ["before", "ok"]
    store.append_messages("default", "a", said("after"))  # the store goes on as before
    assert contents(store, "a") == ["before", "ok", "after", "ok"]


async def test_no_caller_hears_done_for_a_batch_that_was_not_committed(
    store: SQLiteStore,
) -> None:
    store.ensure_session("default", "a", source="api")
    writes = store.write_together
    hold = threading.Event()
    held = threading.Event()

    def gated(calls: Sequence[Callable[[], Any]]) -> list[Outcome[Any]]:
        if not held.is_set():
            held.set()
            hold.wait(10)
            return writes(calls)
        return writes([*calls, abort])[:-1]  # the second batch is abandoned before its commit

    def abort() -> None:
        raise Abort

    group = GroupCommit(gated)
    first = asyncio.ensure_future(
        group.run(lambda: store.append_messages("default", "a", said("kept")))
    )
    await asyncio.to_thread(held.wait, 10)
    lost = [
        asyncio.ensure_future(
            group.run(lambda i=i: store.append_messages("default", "a", said(f"lost {i}")))
        )
        for i in range(3)
    ]
    await asyncio.sleep(0)
    hold.set()
    assert [r.content for r in await first] == ["kept", "ok"]
    for waiting in lost:
        with pytest.raises(Abort):
            await waiting
    assert contents(store, "a") == ["kept", "ok"]
    group.close()


async def test_concurrent_turns_through_the_store_writer(store: SQLiteStore) -> None:
    """Begin and end turns of many sessions at once through the store's own writer: every
    session gets its messages in order and no lease is left behind."""

    async def turn(sid: str, n: int) -> None:
        lease = Lease(f"session:default:{sid}", "me")
        session = await store.group_commit.run(
            lambda: store.begin_turn("default", sid, source="api", lease=lease, ttl_seconds=30)
        )
        assert session is not None and session.message_count == 2 * n
        await store.group_commit.run(
            lambda: store.append_messages("default", sid, said(f"{sid} {n}"), release=lease)
        )

    async def session(sid: str) -> None:
        for n in range(5):
            await turn(sid, n)

    await asyncio.gather(*(session(f"s{i}") for i in range(16)))
    for i in range(16):
        assert contents(store, f"s{i}")[::2] == [f"s{i} {n}" for n in range(5)]
    assert store.connection.execute("SELECT COUNT(*) FROM locks").fetchone()[0] == 0


CHILD = """
import asyncio, sys
from hermes.store.base import NewMessage
from hermes.store.sqlite import SQLiteStore

store = SQLiteStore(sys.argv[1])

async def writer(sid: str) -> None:
    store.ensure_session("default", sid, source="api")
    n = 0
    while True:
        records = await store.group_commit.run(
            lambda: store.append_messages("default", sid, [NewMessage(role="user", content=f"{sid} {n}")])
        )
        print(sid, records[0].index, flush=True)
        n += 1

async def main() -> None:
    await asyncio.gather(*(writer(f"s{i}") for i in range(8)))

asyncio.run(main())
"""


def test_a_killed_process_keeps_every_write_it_acknowledged(tmp_path: Path) -> None:
    """SIGKILL while batches are being written: each write the caller heard about is there."""
    path = tmp_path / "state.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    acknowledged: list[tuple[str, int]] = []
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, env=env
    ) as child:
        assert child.stdout is not None
        try:
            for line in child.stdout:
                sid, index = line.split()
                acknowledged.append((sid, int(index)))
                if len(acknowledged) >= 400:
                    break
        finally:
            child.kill()
    assert len(acknowledged) >= 400
    store = SQLiteStore(path)
    try:
        for sid, index in acknowledged:
            assert contents(store, sid)[index] == f"{sid} {index}"
    finally:
        store.close()
