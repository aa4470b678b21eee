"""Rate limits and quotas per API key and per user (`quotas:` in config.yaml; off by default).

Two windows are counted: requests per minute (every authenticated call) and turns per day
(chat completions). Each is checked for the scoped key that made the request and for the
user scope it acts in, so an app cannot dodge a user's limit by minting keys. The owner
(admin key, default scope) is exempt unless `quotas.apply_to_owner` is true. A refused
request gets 429 with `retry-after` saying when the oldest counted use leaves the window.
The uses are counted in the store (`RecordStore.use_quota`): with several replicas on one
PostgreSQL a key's limit holds across all of them, not per replica.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from hermes.config.settings import QuotaSettings
from hermes.server.errors import APIError
from hermes.store.base import RecordStore

MINUTE = 60.0
DAY = 86400.0

_WHAT = {"requests": "requests per minute", "turns": "turns per day"}


class Quotas:
    """The counters of one server; `check` raises a 429 APIError or records the use.
    Blocking (it asks the store): call it from a worker thread."""

    def __init__(
        self,
        settings: QuotaSettings,
        records: RecordStore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.records = records
        self.clock = clock
        self.rejections = 0

    def check(self, subjects: list[str], *, turn: bool) -> None:
        """Count one request (and one turn) for every subject ("key:<id>", "user:<scope>")."""
        limits: list[tuple[str, int | None, float]] = [
            ("requests", self.settings.requests_per_minute, MINUTE),
        ]
        if turn:
            limits.append(("turns", self.settings.turns_per_day, DAY))
        counters = [
            (f"{kind}:{span:g}:{who}", limit, span)
            for kind, limit, span in limits
            if limit
            for who in subjects
        ]
        if not counters:
            return
        refused = self.records.use_quota([(c, s, n) for c, n, s in counters], self.clock())
        if refused is None:
            return
        self.rejections += 1
        counter, wait = refused
        kind, _, rest = counter.partition(":")
        who = rest.partition(":")[2]
        limit = next(n for c, n, _ in counters if c == counter)
        seconds = max(1, math.ceil(wait))
        raise APIError(
            429,
            f"Rate limit reached for {who}: {limit} {_WHAT[kind]} "
            f"(quotas in config.yaml); retry in {seconds} s.",
            "rate_limit_error",
            "rate_limit_exceeded",
            headers={"Retry-After": str(seconds)},
        )
