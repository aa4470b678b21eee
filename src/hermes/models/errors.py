"""Typed model errors that callers can act on (retry, compress, tell the user)."""

from __future__ import annotations

from hermes.errors import HermesError


class ModelError(HermesError):
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


SETUP_HINT = (
    "run `hermes setup`, or try Hermes with the echo model: "
    "`python -m hermes.testing.fake_model --port 8000 &` then start Hermes with "
    "`OPENAI_BASE_URL=http://127.0.0.1:8000/v1 HERMES_MODEL=echo`"
)
"""How to get a model, said wherever one is missing (serve's first line, the 503, /health).
Not an example URL on port 11434: that is Hermes' own port, and following it makes Hermes
call itself."""


class ModelNotConfiguredError(ModelError):
    """No endpoint or model name is configured."""


class ModelAuthError(ModelError):
    """The endpoint rejected our key (401/403)."""


class ModelRateLimitError(ModelError):
    """Still rate-limited (429) after the retries."""


class ContextLengthExceededError(ModelError):
    """The prompt did not fit; `limit` is the window the provider reported, when it said;
    `tokens` is set when Hermes refused before calling the model (its own estimate)."""

    def __init__(
        self,
        message: str,
        *,
        limit: int | None = None,
        status_code: int | None = 400,
        tokens: int | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.limit = limit
        self.tokens = tokens


class ModelUnavailableError(ModelError):
    """5xx, timeout or connection failure after the retries."""


class ModelBadRequestError(ModelError):
    """The endpoint refused the request for another reason (4xx)."""


class ModelTimeoutError(ModelUnavailableError):
    """The endpoint did not answer in time (per read, or the whole call's budget)."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message, status_code=status_code, reason="timeout")


class ModelUnreachableError(ModelUnavailableError):
    """The connection could not be made (refused, reset, DNS)."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message, status_code=status_code, reason="unreachable")


class ModelBadAnswerError(ModelUnavailableError):
    """HTTP 200, but not an answer: not JSON, no choices, HTML instead of an event stream."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message, status_code=status_code, reason="bad_answer")


class ModelStreamError(ModelUnavailableError):
    """An error event inside a 200 stream."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message, status_code=status_code, reason="stream_error")


class ModelStreamBrokenError(ModelUnavailableError):
    """The stream started and then broke off: what was said is not a whole answer."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message, status_code=status_code, reason="broken_stream")
