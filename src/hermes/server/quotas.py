"""Rate limits and quotas per API key and per user (`quotas:` in config.yaml; off by default).

Two windows are counted in this process: requests per minute (every authenticated call) and
turns per day (chat completions). Each is checked for the scoped key that made the request
and for the user scope it acts in, so an app cannot dodge a user's limit by minting keys. The
owner (admin key, default scope) is exempt unless `quotas.apply_to_owner` is true. A refused
request gets 429 with `retry-after` saying when the oldest counted use leaves the window.
Counts are per process: with several replicas each enforces its own share.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

from hermes.config.settings import QuotaSettings
from hermes.server.errors import APIError

MINUTE = 60.0
DAY = 86400.0


class _Window:
    """Timestamps of uses within the last `span` seconds."""

    __slots__ = ("span", "uses")

    def __init__(self, span: float) -> None:
        self.span = span
        self.uses: deque[float] = deque()

    def retry_after(self, now: float, limit: int) -> float | None:
        """None when one more use fits, else seconds until it will."""
        while self.uses and self.uses[0] <= now - self.span:
            self.uses.popleft()
        if len(self.uses) < limit:
            return None
        return self.uses[0] + self.span - now


class Quotas:
    """The counters of one server; `check` raises a 429 APIError or records the use."""

    def __init__(self, settings: QuotaSettings, clock: Callable[[], float] = time.monotonic):
        self.settings = settings
        self.clock = clock
        self._windows: dict[tuple[str, str, str], _Window] = {}
        self.rejections = 0

    def _window(self, kind: str, who: str, span: float) -> _Window:
        key = (kind, who, str(span))
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = _Window(span)
        return window

    def check(self, subjects: list[str], *, turn: bool) -> None:
        """Count one request (and one turn) for every subject ("key:<id>", "user:<scope>")."""
        limits: list[tuple[str, int | None, float, str]] = [
            ("requests", self.settings.requests_per_minute, MINUTE, "requests per minute"),
        ]
        if turn:
            limits.append(("turns", self.settings.turns_per_day, DAY, "turns per day"))
        now = self.clock()
        windows: list[_Window] = []
        for kind, limit, span, what in limits:
            if not limit:
                continue
            for who in subjects:
                window = self._window(kind, who, span)
                wait = window.retry_after(now, limit)
                if wait is not None:
                    self.rejections += 1
                    seconds = max(1, math.ceil(wait))
                    raise APIError(
                        429,
                        f"Rate limit reached for {who}: {limit} {what} "
                        f"(quotas in config.yaml); retry in {seconds} s.",
                        "rate_limit_error",
                        "rate_limit_exceeded",
                        headers={"Retry-After": str(seconds)},
                    )
                windows.append(window)
        for window in windows:
            window.uses.append(now)
