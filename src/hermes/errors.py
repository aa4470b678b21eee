"""The root of every exception Hermes defines, and the one rule for what is tried again.

One root lets a caller (a plugin, the CLI, an embedding application) catch "anything Hermes
refused" in one clause without also swallowing bugs, and lets a test check that no module adds
an exception outside it.

The rule: **retry only an error that says it is retryable.** `retryable` is False unless said
otherwise, because most Hermes errors are refusals (bad input, a missing setting, a platform that
said no) that the same call meets again, and retrying those only delays the message the user
needs. An error that may clear by itself (a timeout, an unreachable host, a rate limit) says so:
per raise with `retryable=True`, or on the class when every error of that kind is transient. The
gateway's adapter supervisor, delivery (cron and `send_message`) and the model client all read
this one attribute.
"""

from __future__ import annotations

from typing import Any


class HermesError(Exception):
    """Something Hermes refused or could not do; `retryable` says whether trying again may help."""

    retryable: bool = False

    def __init__(self, *args: Any, retryable: bool | None = None, **kwargs: Any) -> None:
        # the other base (ValueError, starlette's HTTPException, …) gets everything else
        super().__init__(*args, **kwargs)
        if retryable is not None:
            self.retryable = retryable
