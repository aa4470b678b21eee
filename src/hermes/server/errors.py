"""One error envelope for every failure: `{"error": {"message", "type", "code", "param"}}` (SPEC §6).

Raise `APIError(status, message, ...)` anywhere in a route or dependency; the handlers installed
by `install_error_handlers` render it, and also render FastAPI's validation errors (400 naming the
field), unknown routes and methods (404/405). Unexpected exceptions are rendered by
`hermes.server.middleware` (500, generic message, logged) so no traceback ever reaches a client.

`APIError` subclasses Starlette's HTTPException on purpose: FastAPI re-raises HTTPExceptions
that happen while it reads a request body instead of turning them into a generic 400, so a
body-size limit raised from `receive()` keeps its 413.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from hermes.agent.client_tools import TurnInputError
from hermes.agent.locks import SessionBusyError, ShuttingDownError
from hermes.errors import HermesError
from hermes.models.errors import (
    ContextLengthExceededError,
    ModelAuthError,
    ModelBadAnswerError,
    ModelBadRequestError,
    ModelError,
    ModelNotConfiguredError,
    ModelRateLimitError,
    ModelStreamBrokenError,
    ModelStreamError,
    ModelTimeoutError,
    ModelUnreachableError,
)
from hermes.server.validation import invalid_json_sentence, sentence
from hermes.store.base import StoreUnavailableError

log = logging.getLogger(__name__)

SERVER_ERROR = "server_error"
INVALID_REQUEST = "invalid_request_error"

_STATUS_CODES = {
    400: "invalid_request",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limit_exceeded",
    500: "internal_error",
    502: "upstream_error",
    503: "service_unavailable",
    504: "upstream_timeout",
    507: "disk_full",
}


def code_for(status: int) -> str:
    """The code of an error raised without one: every envelope has a non-null `code`."""
    return _STATUS_CODES.get(status, "invalid_request" if status < 500 else "server_error")


class APIError(HermesError, StarletteHTTPException):
    """An HTTP error with the OpenAI envelope; the message is a sentence saying what to fix."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str = INVALID_REQUEST,  # noqa: A002 - the envelope's field name
        code: str | None = None,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status_code=status, detail=message, headers=headers)
        self.status = status
        self.message = message
        self.type = type
        self.code = code or code_for(status)
        self.param = param

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.code, self.param)

    def response(self) -> Response:
        return error_response(
            self.status, self.message, self.type, self.code, self.param, headers=self.headers
        )


def error_body(
    message: str,
    type: str = INVALID_REQUEST,
    code: str | None = None,
    param: str | None = None,  # noqa: A002
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "code": code, "param": param}}


def error_response(
    status: int,
    message: str,
    type: str = INVALID_REQUEST,  # noqa: A002
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    payload = json.dumps(error_body(message, type, code or code_for(status), param)).encode()
    return Response(payload, status_code=status, headers=headers, media_type="application/json")


# ---------------------------------------------------------------------- mapping


_UNAVAILABLE: tuple[tuple[type[ModelError], int, str, str], ...] = (
    # error type, status, code, what the client is told
    (ModelTimeoutError, 504, "upstream_timeout", "The upstream model did not answer in time."),
    (
        ModelUnreachableError,
        503,
        "upstream_unavailable",
        "The upstream model could not be reached (connection failed).",
    ),
    (
        ModelStreamBrokenError,
        502,
        "upstream_error",
        "The upstream model's answer broke off after it had started.",
    ),
    (ModelStreamError, 502, "upstream_error", "The upstream model reported an error mid-answer."),
    (
        ModelBadAnswerError,
        502,
        "upstream_error",
        "The upstream model sent an answer Hermes cannot read.",
    ),
)


MODEL_ERROR_COUNTS: dict[str, int] = {}
"""Upstream failures by error class since the process started (read by /metrics)."""


def from_model_error(exc: ModelError) -> APIError:
    """Map an upstream model failure to the status a client can act on (never a bare 500).

    Clients are told what kind of failure it was and the upstream status, never the model
    endpoint's address or what it said (which may name internal hosts or echo keys); the
    server log keeps the full sentence for the operator.
    """
    if isinstance(exc, ContextLengthExceededError) and exc.tokens is not None:
        return APIError(
            400,
            f"{exc}; shorten the message or split it over several turns. The model was not called.",
            INVALID_REQUEST,
            "context_length_exceeded",
            "messages",
        )
    error_kind = type(exc).__name__.removeprefix("Model").removesuffix("Error") or "Model"
    MODEL_ERROR_COUNTS[error_kind] = MODEL_ERROR_COUNTS.get(error_kind, 0) + 1
    log.warning("upstream model failure: %s", exc)
    status = f" (HTTP {exc.status_code})" if exc.status_code else ""
    if isinstance(exc, ModelNotConfiguredError):
        return APIError(
            503,
            f"Hermes has no model endpoint to answer with. {exc}",
            SERVER_ERROR,
            "model_not_configured",
        )
    if isinstance(exc, ModelAuthError):
        return APIError(
            502,
            f"Upstream authentication failed{status}: the model endpoint rejected Hermes' "
            "key. The server's operator should check model.api_key (OPENAI_API_KEY).",
            SERVER_ERROR,
            "upstream_auth_error",
        )
    if isinstance(exc, ModelRateLimitError):
        return APIError(
            503,
            f"The upstream model is rate-limiting Hermes{status}. Retry later.",
            SERVER_ERROR,
            "upstream_rate_limited",
            headers={"Retry-After": "10"},
        )
    if isinstance(exc, ContextLengthExceededError):
        limit = f" ({exc.limit} tokens)" if exc.limit else ""
        return APIError(
            400,
            f"The conversation does not fit the model's context window{limit}, even after "
            "compression. Shorten the messages or start a new session.",
            INVALID_REQUEST,
            "context_length_exceeded",
            "messages",
        )
    if isinstance(exc, ModelBadRequestError):
        return APIError(
            502,
            f"The upstream model refused Hermes' request{status}; the server log has details.",
            SERVER_ERROR,
            "upstream_bad_request",
        )
    for kind, code_status, code, message in _UNAVAILABLE:
        if isinstance(exc, kind):
            return APIError(code_status, message, SERVER_ERROR, code)
    return APIError(
        502,
        f"The upstream model failed{status}; the server log has details.",
        SERVER_ERROR,
        "upstream_error",
    )


def from_store_unavailable(exc: StoreUnavailableError) -> APIError:
    """503 while the database is unreachable; the address stays in the server log."""
    log.error("database unavailable: %s", exc)
    return APIError(
        503,
        "Hermes cannot reach its database right now; nothing was stored. Retry in a few "
        "seconds (the server reconnects by itself).",
        SERVER_ERROR,
        "database_unavailable",
        headers={"Retry-After": "5"},
    )


def from_turn_error(exc: Exception) -> APIError | None:
    """The envelope for a failure of an agent turn, or None when it is an unexpected bug."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, ModelError):
        return from_model_error(exc)
    if isinstance(exc, TurnInputError):
        return APIError(400, str(exc), INVALID_REQUEST, "invalid_tool_traffic", exc.param)
    if isinstance(exc, ShuttingDownError):
        return APIError(
            503,
            f"{exc}; retry shortly.",
            SERVER_ERROR,
            "shutting_down",
            headers={"Retry-After": "5"},
        )
    if isinstance(exc, StoreUnavailableError):
        return from_store_unavailable(exc)
    if isinstance(exc, SessionBusyError):
        return APIError(
            409,
            f"{exc}; retry when its current turn has finished.",
            INVALID_REQUEST,
            "session_busy",
        )
    return None


# ---------------------------------------------------------------------- handlers


def _loc_to_param(loc: tuple[Any, ...] | list[Any]) -> str:
    """('body', 'messages', 0, 'content') -> 'messages[0].content'."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        where, parts = parts[0], parts[1:]
        if not parts:
            return where
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


async def _api_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, APIError)
    return exc.response()


async def _validation_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request"}
    if first.get("type") == "json_invalid":
        return error_response(400, invalid_json_sentence(first), code="invalid_json")
    param = _loc_to_param(tuple(first.get("loc", ())))
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    code = "unknown_parameter" if first.get("type") == "extra_forbidden" else "invalid_value"
    return error_response(
        400,
        f"{sentence(first, param)}{more}.",
        code=code,
        param=None if param == "body" else param,
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        message = f"No route {request.method} {request.url.path}; see /v1/models, /v1/chat/completions, /v1/responses."
        return error_response(404, message, code="not_found", headers=exc.headers)
    if exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}."
        return error_response(405, message, code="method_not_allowed", headers=exc.headers)
    kind = SERVER_ERROR if exc.status_code >= 500 else INVALID_REQUEST
    return error_response(exc.status_code, str(exc.detail), kind, headers=exc.headers)


async def _store_unavailable(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, StoreUnavailableError)
    return from_store_unavailable(exc).response()


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(APIError, _api_error)
    app.add_exception_handler(StoreUnavailableError, _store_unavailable)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
