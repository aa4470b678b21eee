"""When a failed model request is worth repeating, and how long to wait first.

One policy for every call the model client makes, streamed or not, so a 429 is treated the
same whichever path hit it. The rules are the ones OpenAI-compatible servers expect of
their clients (and the openai SDK follows):

* retry 408, 409, 429 and any 5xx, timeouts and connection failures; never other 4xx;
* a refused connection (nothing listens: the server is down or the URL is wrong) is retried
  once, after `REFUSED_DELAY`, not backed off for seconds: the user hears at once what to fix;
* an explicit `x-should-retry: true|false` response header overrides the status;
* wait what `retry-after-ms` or `retry-after` (seconds or an HTTP date) asks, when that is
  between 0 and 60 s; otherwise back off exponentially from 0.5 s, capped at 8 s, with up to
  25% jitter so that many clients do not retry in step.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

RETRYABLE_STATUSES = frozenset({408, 409, 429})
INITIAL_DELAY = 0.5
MAX_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
REFUSED_RETRIES = 1
REFUSED_DELAY = 0.2


def should_retry_status(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an HTTP error status is worth another attempt."""
    hint = (headers.get("x-should-retry") or "").strip().lower()
    if hint == "true":
        return True
    if hint == "false":
        return False
    return status in RETRYABLE_STATUSES or status >= 500


def retry_delay(retries_taken: int, headers: Mapping[str, str] | None = None) -> float:
    """Seconds to wait before retry number `retries_taken + 1`."""
    asked = _retry_after(headers) if headers else None
    if asked is not None and 0 <= asked <= MAX_RETRY_AFTER:
        return asked
    backoff = min(INITIAL_DELAY * 2.0**retries_taken, MAX_DELAY)
    return backoff * (1 - 0.25 * random.random())


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait the server asked for, in seconds, or None when it did not (or said nonsense)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()
