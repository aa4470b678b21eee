"""Latencies and counts measured deep in the core (a memory provider's prefetch, a recall,
runs and approvals), kept per process and read by `/metrics` at scrape time, the way the
model errors are: core code never reaches the server's metric objects.

A bucket array per labelled series; `observe` is a bisect and two additions.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import wraps
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

BUCKETS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


@dataclass
class Series:
    """One histogram series: counts per bucket (the last is +Inf), their sum and count."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0
    count: int = 0


HELP: dict[str, str] = {
    "memory_provider_seconds": "External memory provider prefetches, by provider and outcome.",
    "recall_seconds": "session_search discoveries (a recall over past sessions), by outcome.",
    "runs": "/v1/runs runs by final status (completed, failed, cancelled).",
    "approvals": "Approval requests of runs' dangerous tool calls, by answer (once, session, "
    "always, deny, timeout).",
}
"""What each name measures (the `/metrics` help text)."""

_lock = threading.Lock()
_series: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
COUNTS: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()
"""Counters by (name, labels), e.g. ("runs", (("status", "completed"),))."""


def observe(name: str, seconds: float, **labels: str) -> None:
    key = (name, tuple(sorted(labels.items())))
    with _lock:
        series = _series.get(key)
        if series is None:
            series = _series[key] = Series()
        series.counts[bisect_left(BUCKETS, seconds)] += 1
        series.total += seconds
        series.count += 1


def count(name: str, **labels: str) -> None:
    with _lock:
        COUNTS[(name, tuple(sorted(labels.items())))] += 1


def histograms() -> list[tuple[str, dict[str, str], Series]]:
    """A snapshot of every series: (name, labels, copy of its buckets)."""
    with _lock:
        return [
            (name, dict(labels), Series(list(s.counts), s.total, s.count))
            for (name, labels), s in sorted(_series.items())
        ]


def counters() -> list[tuple[str, dict[str, str], int]]:
    with _lock:
        return [(name, dict(labels), n) for (name, labels), n in sorted(COUNTS.items())]


@contextmanager
def timed(name: str, **labels: str) -> Iterator[dict[str, str]]:
    """Time the block into `name` with an `outcome` label: "ok", "error" when it raised, or
    what the block set in the yielded labels (e.g. "timeout")."""
    started = time.perf_counter()
    try:
        yield labels
    except BaseException:
        labels.setdefault("outcome", "error")
        raise
    finally:
        labels.setdefault("outcome", "ok")
        observe(name, time.perf_counter() - started, **labels)


def timed_call(name: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorator form of `timed` for a plain function."""

    def wrap(function: Callable[P, T]) -> Callable[P, T]:
        @wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            with timed(name):
                return function(*args, **kwargs)

        return run

    return wrap
