"""Typed model errors that callers can act on (retry, compress, tell the user)."""

from __future__ import annotations


class ModelError(Exception):
    """Base class: the model endpoint failed in a way the caller should handle."""

    status_code: int | None = None
    reason: str | None = None
    """What went wrong, in a word a client may be told without the endpoint's address:
    "unreachable", "timeout", "broken_stream", "stream_error", "bad_answer" (or None)."""

    def __init__(
        self, message: str, *, status_code: int | None = None, reason: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.reason = reason


class ModelNotConfiguredError(ModelError):
    """No endpoint or model name is configured."""


class ModelAuthError(ModelError):
    """The endpoint rejected our key (401/403)."""


class ModelRateLimitError(ModelError):
    """Still rate-limited (429) after the retries."""


class ContextLengthExceededError(ModelError):
    """The prompt did not fit; `limit` is the window the provider reported, when it said."""

    def __init__(self, message: str, *, limit: int | None = None, status_code: int | None = 400):
        super().__init__(message, status_code=status_code)
        self.limit = limit


class ModelUnavailableError(ModelError):
    """5xx, timeout or connection failure after the retries."""


class ModelBadRequestError(ModelError):
    """The endpoint refused the request for another reason (4xx)."""
