"""The last log lines in memory, for the dashboard's live tail (`GET /api/logs`).

`hermes serve` attaches one `LogTail` to the root logger: it keeps the newest lines in a
ring (nothing on disk, bounded memory) with every secret masked as the console's lines are
(`hermes.redact`), and wakes whoever follows the tail. It records what the root
logger lets through (warnings and up; everything with `hermes -v`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

from hermes.observability import context
from hermes.redact import Redactor

CAPACITY = 2000
LEVELS = ("debug", "info", "warning", "error", "critical")


class LogTail(logging.Handler):
    """A ring of redacted log lines, each `{"id", "ts", "level", "logger", "message"}`."""

    def __init__(self, redact: Redactor, capacity: int = CAPACITY) -> None:
        super().__init__()
        self.redact = redact
        self.lines: deque[dict[str, Any]] = deque(maxlen=capacity)
        self._ids = itertools.count(1)
        self._guard = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + logging.Formatter().formatException(record.exc_info)
            line: dict[str, Any] = {
                "ts": datetime.fromtimestamp(record.created, UTC).isoformat(
                    timespec="milliseconds"
                ),
                "level": record.levelname.lower(),
                "logger": record.name,
                "message": self.redact(message),
                **{k: v for k, v in context.current().items() if isinstance(v, str)},
            }
        except Exception:  # a log call must never fail the caller
            self.handleError(record)
            return
        with self._guard:
            line["id"] = next(self._ids)
            self.lines.append(line)
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(event.set)

    def recent(
        self, *, after: int = 0, level: str | None = None, text: str | None = None, limit: int = 200
    ) -> list[dict[str, Any]]:
        """The newest `limit` lines after id `after` at `level` or above holding `text`."""
        with self._guard:
            lines = list(self.lines)
        found = [line for line in lines if line["id"] > after and matches(line, level, text)]
        return found[-limit:] if limit else []

    @contextlib.contextmanager
    def _waiting(self) -> Iterator[asyncio.Event]:
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._guard:
            self._waiters.add(entry)
        try:
            yield entry[1]
        finally:
            with self._guard:
                self._waiters.discard(entry)

    async def follow(
        self,
        *,
        after: int = 0,
        level: str | None = None,
        text: str | None = None,
        heartbeat: float = 15.0,
    ) -> AsyncIterator[dict[str, Any] | None]:
        """Lines after `after` as they come (None every `heartbeat` seconds of quiet)."""
        with self._waiting() as event:
            while True:
                event.clear()
                with self._guard:
                    fresh = [line for line in self.lines if line["id"] > after]
                for line in fresh:
                    after = line["id"]
                    if matches(line, level, text):
                        yield line
                if not fresh:
                    try:
                        await asyncio.wait_for(event.wait(), heartbeat)
                    except TimeoutError:
                        yield None


def matches(line: dict[str, Any], level: str | None, text: str | None) -> bool:
    """At `level` or above (unknown levels count as the highest), holding `text`."""
    if level:
        rank = LEVELS.index(line["level"]) if line["level"] in LEVELS else len(LEVELS)
        if rank < LEVELS.index(level):
            return False
    if text and text.lower() not in f"{line['logger']} {line['message']}".lower():
        return False
    return True


@contextlib.contextmanager
def attached(tail: LogTail) -> Iterator[LogTail]:
    """The tail on the root logger for the block (`hermes serve`'s lifetime)."""
    root = logging.getLogger()
    root.addHandler(tail)
    try:
        yield tail
    finally:
        root.removeHandler(tail)
