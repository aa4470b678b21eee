"""One classification of upstream failures for both transports: a failed attempt
(`AttemptFailed`: an HTTP status, a timeout, a failed connect, an error event in a stream)
becomes the typed `ModelError` the agent loop and the server act on, with a message that names
the problem without the caller's key."""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError
from hermes.models.errors import (
    ContextLengthExceededError,
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelRateLimitError,
    ModelStreamError,
    ModelTimeoutError,
    ModelUnavailableError,
    ModelUnreachableError,
)
from hermes.models.retry import should_retry_status

if TYPE_CHECKING:
    import openai

# Local servers accept any bearer (or none); the SDK insists on a non-empty key.
PLACEHOLDER_API_KEY = "not-needed"

# Phrases providers use when the prompt does not fit the window. Matched lower-cased.
_CONTEXT_PHRASES: tuple[str, ...] = (
    "maximum context length",
    "context length",
    "context_length_exceeded",
    "context window",
    "context size",  # llama.cpp: "exceeds the available context size"
    "too many tokens",
    "prompt is too long",
)

# Ways providers spell the window size in that message. First match wins.
_LIMIT_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"maximum context length (?:is|of)\s+([\d,_]+)", re.I),
    re.compile(r"context (?:window|length|size) (?:is|of)\s+([\d,_]+)", re.I),
    re.compile(r"([\d,_]+)[- ]token (?:context|limit|window)", re.I),
    re.compile(r">\s*([\d,_]+)\s*(?:tokens?\s*)?maximum", re.I),  # "210000 tokens > 200000 maximum"
    re.compile(r"(?:limit|maximum) (?:is|of)\s+([\d,_]+)\s*tokens", re.I),
)

# Things that look like provider secrets, in case an upstream error echoes one back.
_SECRET_LIKE = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-*]{6,}")

_MAX_UPSTREAM_CHARS = 300


class AttemptFailed(HermesError):
    """One request that did not produce an answer, reduced to what classification needs.

    `kind` is "status" (an HTTP error status), "timeout", "connect" or "stream" (an error
    event inside a 200 stream); `body` is the error JSON (outer or unwrapped) or raw text.
    """

    def __init__(
        self,
        kind: str,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        message: str = "",
        code: str | None = None,
        refused: bool = False,
    ) -> None:
        super().__init__(kind, status, retryable=_worth_retrying(kind, status, headers or {}))
        self.kind = kind
        self.refused = refused
        """A "connect" failure because nothing listens at the address (ECONNREFUSED): a
        down or mistyped endpoint, which waiting seconds for will not fix."""
        self.status = status
        self.headers: Mapping[str, str] = headers or {}
        self.body = body
        self.message = message
        self.code = code


def _worth_retrying(kind: str, status: int | None, headers: Mapping[str, str]) -> bool:
    """A timeout, a failed connection or a status the upstream means as "later" may clear."""
    if kind in ("timeout", "connect"):
        return True
    if kind == "status" and status is not None:
        return should_retry_status(status, headers)
    return False


class Classifier:
    """Turns failed attempts into typed errors for one endpoint (its address shown without
    credentials, its key scrubbed from anything the upstream echoed)."""

    def __init__(self, *, base_url: str | None, api_key: str, timeout: float) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self._api_key = api_key

    def error(self, failure: AttemptFailed, *, attempts: int) -> ModelError:
        """The typed error the agent loop acts on, with a message that names the upstream problem."""
        where = f"The model endpoint at {self.display_url()}"
        tried = f" ({attempts} attempts)" if attempts > 1 else ""

        if failure.kind == "timeout":
            return ModelTimeoutError(
                f"{where} did not answer within {self.timeout:g}s{tried}, so there is no status code."
            )
        if failure.kind == "connect" and failure.refused:
            return ModelUnreachableError(
                f"{where} could not be reached{tried}: the connection was refused, so nothing "
                "is listening there. Start the model server, or point OPENAI_BASE_URL / "
                "model.base_url at one that runs; `hermes doctor` checks the endpoint."
            )
        if failure.kind == "connect":
            return ModelUnreachableError(
                f"{where} could not be reached{tried}: connection failed, so there is no status code."
            )
        detail = self._upstream_detail(failure)
        if failure.kind == "stream" or failure.status is None:
            # An `error` event inside an otherwise-200 stream: there is no status code to go on.
            if is_context_error(failure):
                return ContextLengthExceededError(
                    f"{where} said mid-stream that the prompt does not fit the context window"
                    f" (HTTP 200){detail}.",
                    limit=context_limit(failure),
                    status_code=None,
                )
            return ModelStreamError(f"{where} reported an error mid-stream (HTTP 200){detail}.")

        status = failure.status
        if status in (401, 403):
            return ModelAuthError(
                f"{where} rejected the API key with HTTP {status}{detail}.", status_code=status
            )
        if status == 429:
            return ModelRateLimitError(
                f"{where} kept rate-limiting the request with HTTP 429{tried}{detail}.",
                status_code=status,
            )
        if 400 <= status < 500 and is_context_error(failure):
            return ContextLengthExceededError(
                f"{where} said the prompt does not fit the context window, HTTP {status}{detail}.",
                limit=context_limit(failure),
                status_code=status,
            )
        if 400 <= status < 500:
            return ModelBadRequestError(
                f"{where} refused the request with HTTP {status}{detail}.", status_code=status
            )
        return ModelUnavailableError(
            f"{where} failed with HTTP {status}{tried}{detail}.", status_code=status
        )

    def display_url(self) -> str:
        """The base URL without any user:password@ part."""
        return re.sub(r"//[^/@]*@", "//", self.base_url or "(not configured)")

    def _upstream_detail(self, failure: AttemptFailed) -> str:
        """': <upstream message>' trimmed to one clause, or '' when the server said nothing."""
        message = error_field(failure.body, "message") or ""
        if not message and isinstance(failure.body, str):
            message = failure.body
        message = self._scrub(" ".join(message.split())).rstrip(".")
        if not message:
            return ""
        if len(message) > _MAX_UPSTREAM_CHARS:
            message = message[: _MAX_UPSTREAM_CHARS - 3] + "..."
        return f': "{message}"'

    def _scrub(self, text: str) -> str:
        """Remove our key (and anything key-shaped) in case the upstream echoed it back."""
        if self._api_key and self._api_key != PLACEHOLDER_API_KEY:
            text = text.replace(self._api_key, "***")
        return _SECRET_LIKE.sub(r"\1-***", text)


def failure_from_sdk(exc: openai.OpenAIError, sdk: Any) -> AttemptFailed:
    """An SDK exception as the same `AttemptFailed` the aiohttp path raises."""
    if isinstance(exc, sdk.APITimeoutError) and not refused(exc):
        return AttemptFailed("timeout")
    if isinstance(exc, sdk.APIConnectionError):
        return AttemptFailed("connect", refused=nothing_listening(exc))
    if isinstance(exc, sdk.APIStatusError):
        return AttemptFailed(
            "status",
            status=exc.status_code,
            headers=exc.response.headers,
            body=exc.body,
            message=exc.message,
            code=exc.code,
        )
    if isinstance(exc, sdk.APIError):
        return AttemptFailed("stream", body=exc.body, message=exc.message, code=exc.code)
    return AttemptFailed("connect", message=str(exc))


def stream_error(error: Any) -> AttemptFailed:
    """The `error` object of an event inside a 200 stream, as `failure_from_sdk` gives the
    SDK's error for it."""
    fields = error if isinstance(error, dict) else {}
    message, code = fields.get("message"), fields.get("code")
    return AttemptFailed(
        "stream",
        body=error,
        message=message
        if isinstance(message, str) and message
        else "An error occurred during streaming",
        code=code if isinstance(code, str) else None,
    )


def refused(exc: BaseException) -> bool:
    """True when a 'timeout' was really a failed connect (the aiohttp transport reports
    refused connections, and servers that hang up without answering, as connect timeouts);
    the cause chain still holds the OSError or aiohttp's disconnect error."""
    import aiohttp  # here: a server answers /health before it loads aiohttp

    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError):
            return True
        if isinstance(cause, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def nothing_listening(exc: BaseException) -> bool:
    """True when the cause chain holds a refused connection (ECONNREFUSED): nothing listens
    at the address. Also when every address of a name refused (asyncio then raises one
    OSError "Multiple exceptions: [Errno 111] ..., [Errno 111] ...")."""
    refused_text = f"[Errno {errno.ECONNREFUSED}]"
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return True
        if isinstance(cause, OSError):
            if cause.errno == errno.ECONNREFUSED:
                return True
            text = str(cause)
            if text.startswith("Multiple exceptions") and text.count("[Errno") == text.count(
                refused_text
            ):
                return True
        cause = cause.__cause__ or cause.__context__
    return False


def error_field(body: Any, name: str) -> str | None:
    """A field of the upstream error object, whether `{"error": ...}` was unwrapped or not."""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and name in inner:
            body = inner
        value = body.get(name)
        if value is not None:
            return str(value)
    return None


def error_text(failure: AttemptFailed) -> str:
    parts = [
        failure.message,
        error_field(failure.body, "message") or "",
        error_field(failure.body, "type") or "",
    ]
    if isinstance(failure.body, str):
        parts.append(failure.body)
    elif failure.body is not None:
        parts.append(json.dumps(failure.body, ensure_ascii=False))
    return " ".join(parts).lower()


def is_context_error(failure: AttemptFailed) -> bool:
    code = (failure.code or error_field(failure.body, "code") or "").lower()
    if code == "context_length_exceeded":
        return True
    text = error_text(failure)
    return "exceed_context_size" in text or any(p in text for p in _CONTEXT_PHRASES)


def context_limit(failure: AttemptFailed) -> int | None:
    """The window size the provider named, if it named one."""
    # llama.cpp puts it in the body rather than the message.
    n_ctx = error_field(failure.body, "n_ctx")
    if n_ctx and n_ctx.isdigit():
        return int(n_ctx)
    text = " ".join([error_field(failure.body, "message") or "", failure.message])
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(text)
        if match:
            digits = re.sub(r"[,_]", "", match.group(1))
            if digits.isdigit():
                return int(digits)
    return None
