"""When the search index catches up with the messages (both backends' deferred indexing).

A turn stores its messages and leaves their indexing to later (`search_catchup` on SQLite,
`postgres.search_index` on PostgreSQL). `Backlog` decides when: at once when DUE_AT
messages wait, else after DUE_AFTER_S, a bounded piece at a time; a failing piece is tried
again RETRY_AFTER_S later. SQLite's writer thread runs the pieces when it has no turn to
write (`group_commit.IdleWork`); a store without a writer thread runs them on a
`BacklogThread`. A search never waits for either: it catches up itself first.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from hermes.store.daemon import DaemonThread

log = logging.getLogger(__name__)

DUE_AT = 32
"""Waiting messages that make a piece due at once. Fewer wait up to DUE_AFTER_S for more:
a piece costs about the same for one turn as for sixteen of them (docs/perf, Round 11)."""
DUE_AFTER_S = 0.25
RETRY_AFTER_S = 1.0


class Backlog:
    """How many messages wait, and when the next piece is due (`group_commit.IdleWork`).

    The count is a hint (another process, or a search, may index them first): each piece
    reports how many still wait, and the count is set from that."""

    def __init__(self, piece: Callable[[], int], count: int = 0) -> None:
        """`piece` indexes a bounded part of what waits and returns how many still wait;
        `count` is what waits already (a previous run's, when the store opens)."""
        self._piece = piece
        self._lock = threading.Lock()
        self._count = count
        self._since = time.monotonic()
        self._not_before = 0.0

    def added(self, messages: int) -> None:
        """`messages` more were stored (committed, or about to be by the caller)."""
        with self._lock:
            if not self._count:
                self._since = time.monotonic()
            self._count += messages

    def due(self) -> float | None:
        """Seconds until a piece is due (0 or less: now); None when nothing waits."""
        with self._lock:
            if not self._count:
                return None
            now = time.monotonic()
            wait = 0.0 if self._count >= DUE_AT else self._since + DUE_AFTER_S - now
            return max(wait, self._not_before - now)

    def run_piece(self) -> None:
        """Index one piece; never raises (a busy or failing database is tried again later,
        and searches catch up by themselves meanwhile)."""
        try:
            left = self._piece()
        except Exception as exc:
            log.warning("the search index could not catch up: %s", exc)
            with self._lock:
                self._not_before = time.monotonic() + RETRY_AFTER_S
            return
        with self._lock:
            self._count = max(0, left)
            self._since = time.monotonic()


class BacklogThread(DaemonThread):
    """A daemon thread running a backlog's pieces when due, for a store whose writes have no
    writer thread of their own; started by the first `added`, stopped by `close`."""

    def __init__(self, backlog: Backlog, name: str) -> None:
        super().__init__(name)
        self.backlog = backlog

    def added(self, messages: int) -> None:
        self.backlog.added(messages)
        with self._wake:
            if not self._closed:
                self._ensure_started()
                self._wake.notify()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._closed:
                    due = self.backlog.due()
                    if due is not None and due <= 0:
                        break
                    self._wake.wait(due)
                if self._closed:
                    return
            self.backlog.run_piece()
