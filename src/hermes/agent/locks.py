"""One turn per session at a time: an in-process asyncio lock plus a cross-process store lease.

The lease is taken in the same store transaction that loads the session, and normally given
up in the transaction that stores the turn (`HeldSession.lease` passed as `release=`), so a
turn costs two writes; whatever path skips that (a failure, a cancel) is covered by `hold`,
which also drops a session the turn began and left without a message.

A process killed mid-turn cannot give its lease up. Leases are short (`LEASE_SECONDS`) and
renewed by a heartbeat while the turn runs, and a holder on this host whose process is gone
is taken over at once (`hermes.store.leases`). `close()` (at shutdown) makes every request
still waiting for a session give up with `ShuttingDownError`, so none holds the exit up.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

from hermes.errors import HermesError
from hermes.store.base import Lease, SessionRecord, Store
from hermes.store.group_commit import GroupCommit
from hermes.store.leases import HEARTBEAT_SECONDS, LEASE_SECONDS, new_holder

POLL_SECONDS = 0.05
log = logging.getLogger(__name__)

T = TypeVar("T")


class SessionBusyError(HermesError):
    """Another process held the session for longer than we were willing to wait."""


class ShuttingDownError(SessionBusyError):
    """The process is shutting down: a turn that had not started yet will not start."""


@dataclass
class HeldSession:
    """A session held for one turn: the session as the lease found it, and the lease."""

    session: SessionRecord
    lease: Lease
    released: bool = False
    """Set once a store write gave the lease up; `hold` then has nothing left to release."""


class SessionLocks:
    """Serialises turns per (scope, session); waiters queue in arrival order."""

    def __init__(self, store: Store, *, wait_seconds: float = 600.0) -> None:
        self._store = store
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._holder = new_holder()
        self._wait_seconds = wait_seconds
        self._closing = False
        self.held = 0
        """Leases this process holds right now (reported by /metrics)."""
        self.active = 0
        """Turns inside `hold` right now, waiting for their session or holding it."""

    def close(self) -> None:
        """Stop admitting turns: requests waiting for a session fail with ShuttingDownError
        (turns already running finish as usual)."""
        self._closing = True

    def _check_open(self) -> None:
        if self._closing:
            raise ShuttingDownError("Hermes is shutting down; the turn was not started")

    def _lock_for(self, key: tuple[str, str]) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock

    @asynccontextmanager
    async def hold(self, scope: str, session_id: str, *, source: str) -> AsyncIterator[HeldSession]:
        """Hold the session (created as `source` if new); the lease is released on exit
        unless the body already gave it up in its final write."""
        key = (scope, session_id)
        lock = self._lock_for(key)
        self._check_open()
        self.active += 1
        try:
            async with lock:
                self._check_open()
                lease = Lease(f"session:{scope}:{session_id}", self._holder)
                held = HeldSession(await self._begin(scope, session_id, source, lease), lease)
                heartbeat = _Heartbeat(self._store, held)
                self.held += 1
                try:
                    yield held
                finally:
                    self.held -= 1
                    await heartbeat.stop()
                    if not held.released:
                        await asyncio.to_thread(self._give_up, held)
        finally:
            self.active -= 1

    @property
    def alone(self) -> bool:
        """Whether one turn at most is in progress: its store writes may then run on the
        event loop's thread (`settle(..., here=True)`), which has nothing else to do."""
        return self.active <= 1

    def _give_up(self, held: HeldSession) -> None:
        """Release a lease the turn did not give up in its final write (it failed or stored
        nothing), first dropping the session if it was and still is empty:
        a session exists once it holds a message, so a failed first turn (no model set, an
        unreachable endpoint) leaves nothing behind in `hermes sessions list`."""
        session, lease = held.session, held.lease
        try:
            if session.message_count == 0:
                now = self._store.get_session(session.scope, session.id)
                if now is not None and now.message_count == 0:
                    self._store.delete_session(session.scope, session.id)
        finally:
            self._store.release_lock(lease.name, lease.holder)

    async def _begin(self, scope: str, session_id: str, source: str, lease: Lease) -> SessionRecord:
        deadline = time.monotonic() + self._wait_seconds
        told = False
        while True:
            session = await self._try_begin(scope, session_id, source, lease)
            if session is not None:
                return session
            self._check_open()
            if time.monotonic() > deadline:
                raise SessionBusyError(f"{lease.name} is busy in another Hermes process")
            if not told:  # why a request is slow to answer, said once
                log.info(
                    "%s is busy in another Hermes process; waiting up to %gs for it",
                    lease.name,
                    self._wait_seconds,
                )
                told = True
            await asyncio.sleep(POLL_SECONDS)

    async def _try_begin(
        self, scope: str, session_id: str, source: str, lease: Lease
    ) -> SessionRecord | None:
        try:
            return await settle(
                self._store,
                lambda: self._store.begin_turn(
                    scope, session_id, source=source, lease=lease, ttl_seconds=LEASE_SECONDS
                ),
                here=self.alone,
            )
        except asyncio.CancelledError:
            # the attempt may have taken the lease: give it back, or other processes would
            # find the session busy for LEASE_SECONDS (no other turn of ours holds it now)
            await asyncio.to_thread(self._store.release_lock, lease.name, lease.holder)
            raise


class _Heartbeat:
    """Keeps a held session's lease alive while the turn runs (renewal never re-takes a lost
    lease). A timer until the first renewal is due: most turns end long before, and a task
    per turn (started, then cancelled and awaited) cost every turn three trips through the
    event loop."""

    def __init__(self, store: Store, held: HeldSession) -> None:
        self._store = store
        self._held = held
        self._task: asyncio.Task[None] | None = None
        self._timer = asyncio.get_running_loop().call_later(HEARTBEAT_SECONDS, self._start)

    def _start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._beat())

    async def _beat(self) -> None:
        held, lease = self._held, self._held.lease
        while not held.released:
            try:
                kept = await asyncio.to_thread(
                    self._store.renew_lock, lease.name, lease.holder, LEASE_SECONDS
                )
            except Exception:
                log.exception("renewing the lease %s failed", lease.name)
                kept = True  # try again at the next beat
            if not kept:
                log.warning("lease %s was lost during a turn", lease.name)
                return
            await asyncio.sleep(HEARTBEAT_SECONDS)

    async def stop(self) -> None:
        self._timer.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def settle(store: Store, call: Callable[[], T], *, here: bool = False) -> T:
    """Run a turn's blocking store write off the loop, settled as `run_settled` does: on
    the store's group-commit writer when it has one (`hermes.store.group_commit`: the writes
    of concurrent turns share a transaction and a wake-up of the loop), else on a worker.
    With `here` (no other turn is in progress), the writer may let it run on this thread."""
    group: GroupCommit | None = getattr(store, "group_commit", None)
    if group is not None:
        return await group.run(call, here=here)
    return await run_settled(call)


async def run_settled(call: Callable[[], T]) -> T:
    """Run a blocking store call in a worker thread; a cancel waits for the call to finish
    before propagating, so cleanup knows whether it took or gave up a lease. The executor's
    future is awaited directly (no task around `to_thread`: two fewer loop callbacks per
    call, twice a turn); the context is copied into the thread as `to_thread` does."""
    loop = asyncio.get_running_loop()
    attempt = loop.run_in_executor(None, contextvars.copy_context().run, call)
    try:
        return await asyncio.shield(attempt)
    except asyncio.CancelledError:
        await asyncio.gather(attempt, return_exceptions=True)
        raise
