"""Group commit: the turns' store writes run on one writer thread, several per transaction.

A busy server's turns each write twice (`begin_turn`, `append_messages`). Run one by one,
every write pays a thread hop (a pool submit, a future chained back to the event loop) and
a transaction of its own, and a transaction that touches the search index pays for FTS5
writing its pending terms out as a new segment. Here the event loop queues the call and the
writer thread runs everything queued so far in one transaction, each call in a savepoint of
its own (a call that raises is undone alone and gets its own error), then hands all the
results back to the loop in one wake-up. Results are given only once the transaction has
committed: a caller never hears "done" for a write that a crash could still take back, and
when the commit fails every caller of that batch gets the error. Calls run in the order they
were queued.

A call queued alone runs in its own transaction, as it would without the writer.

When nothing is queued the writer does the store's deferred work (`IdleWork`: the search
index catching up), a bounded piece at a time, so a turn's write waits at most one piece.

A call may also run on the caller's own thread (`run(..., here=True)`): when the caller's
loop has no other turn to serve, nothing is queued and the store is free, the two thread
wake-ups of a hop cost more than the write itself (docs/perf, Round 12). It then runs as a
call queued alone would, in a transaction of its own. Under load the writer keeps the calls:
there they share transactions, and the loop stays free for other turns.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from hermes.store.daemon import DaemonThread

T = TypeVar("T")

MAX_BATCH = 8
"""Calls per transaction at most: what a batch saves per call no longer grows past a few
calls (docs/perf, Round 8), while every call of a batch waits for the whole batch's commit."""


class Outcome(Generic[T]):
    """What one call of a batch gave: its value, or the exception it raised."""

    __slots__ = ("error", "value")

    def __init__(self, value: T | None = None, error: BaseException | None = None) -> None:
        self.value = value
        self.error = error


class IdleWork(Protocol):
    """Work the writer does when no call is queued, in bounded pieces between calls."""

    def due(self) -> float | None:
        """Seconds until a piece is due (0 or less: now), or None when there is nothing."""
        ...

    def run_piece(self) -> None:
        """Do one bounded piece; must not raise (the writer thread has no one to tell)."""
        ...


class WriteHere(Protocol):
    """The store's side of `run(..., here=True)`: run `call` on this thread, as a call queued
    alone would run, if the store can take it without waiting (for its lock, or for another
    process's transaction); None, having changed nothing, if it cannot. The call's own
    errors are raised."""

    def __call__(self, call: Callable[[], T]) -> Outcome[T] | None: ...


class BatchWriter(Protocol):
    """The store's side: run `calls` in one transaction, each undone alone if it raises;
    raises (having rolled everything back) when the transaction itself fails."""

    def __call__(self, calls: Sequence[Callable[[], Any]]) -> list[Outcome[Any]]: ...


@dataclass
class _Queued:
    call: Callable[[], Any]
    context: contextvars.Context
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]


class GroupCommit(DaemonThread):
    """One writer thread per store, started at the first call, stopped by `close` (after
    running what is queued; later calls fail)."""

    def __init__(
        self,
        write: BatchWriter,
        *,
        name: str = "hermes-store-writer",
        idle: IdleWork | None = None,
        here: WriteHere | None = None,
    ) -> None:
        """Without `here`, every call is queued for the writer."""
        super().__init__(name)
        self._write = write
        self._idle = idle
        self._here = here
        self._queue: deque[_Queued] = deque()
        self._asleep: float | None = None
        """While the writer waits: how long it meant to (inf: until woken)."""

    async def run(self, call: Callable[[], T], *, here: bool = False) -> T:
        """Run the blocking store call `call` on the writer; its value once committed.

        With `here` (the caller has nothing else to do meanwhile), a call that finds nothing
        queued and the store free runs on this thread instead, in its own transaction.
        A cancel waits for the call to settle before propagating (as `run_settled` does),
        so cleanup knows whether the write happened."""
        if here and self._here is not None and not self._queue and not self._closed:
            outcome = self._here(call)  # nothing queued: no call of the writer's goes first
            if outcome is not None:
                self._nudge()
                return outcome.value  # type: ignore[return-value]
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._put(_Queued(call, contextvars.copy_context(), loop, future))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            await asyncio.gather(future, return_exceptions=True)
            raise

    def _nudge(self) -> None:
        """A call run on the caller's thread may have made idle work due: the writer, asleep
        (or not started yet), would not look before its deadline or the next queued call.
        Woken as soon as a piece is due, it keeps each piece small."""
        idle = self._idle
        if idle is None:
            return
        asleep = self._asleep if self._thread is not None else math.inf
        if asleep is None:
            return  # busy: it looks again when it is done
        due = idle.due()
        if due is None or (due > 0 and asleep != math.inf):
            return
        with self._wake:
            if not self._closed:
                self._ensure_started()
                self._wake.notify()

    def _put(self, queued: _Queued) -> None:
        with self._wake:
            if self._closed:
                raise RuntimeError("the store is closed")
            self._queue.append(queued)
            self._ensure_started()
            self._wake.notify()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closed:
                    due = self._idle.due() if self._idle is not None else None
                    if due is not None and due <= 0:
                        break  # nothing queued, idle work due
                    self._asleep = math.inf if due is None else due
                    self._wake.wait(due)
                    self._asleep = None
                if not self._queue and self._closed:
                    return
                count = min(len(self._queue), MAX_BATCH)
                batch = [self._queue.popleft() for _ in range(count)]
            if batch:
                self._settle(batch, self._outcomes(batch))
            elif self._idle is not None:
                self._idle.run_piece()

    def _outcomes(self, batch: list[_Queued]) -> list[Outcome[Any]]:
        calls = [_in_context(q) for q in batch]
        try:
            return self._write(calls)
        except BaseException as exc:  # the transaction failed: nothing of it was kept
            return [Outcome(error=exc) for _ in batch]

    @staticmethod
    def _settle(batch: list[_Queued], outcomes: list[Outcome[Any]]) -> None:
        """Hand the results to their loops: one wake-up per loop, not one per call."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Queued, Outcome[Any]]]] = {}
        for queued, outcome in zip(batch, outcomes, strict=True):
            by_loop.setdefault(queued.loop, []).append((queued, outcome))
        for loop, pairs in by_loop.items():
            try:
                loop.call_soon_threadsafe(_deliver, pairs)
            except RuntimeError:  # that loop is closed: nobody is waiting any more
                pass


def _in_context(queued: _Queued) -> Callable[[], Any]:
    return lambda: queued.context.run(queued.call)


def _deliver(pairs: list[tuple[_Queued, Outcome[Any]]]) -> None:
    for queued, outcome in pairs:
        if queued.future.done():
            continue
        if outcome.error is not None:
            queued.future.set_exception(outcome.error)
        else:
            queued.future.set_result(outcome.value)
