"""Pure-ASGI hygiene middleware: body-size limit, security headers, the last-resort 500, and
the request id every log line of a request carries.

Pure ASGI (not BaseHTTPMiddleware) because it sits on every request: it adds one function call
and one header tuple, buffers nothing, and does not break streaming or disconnect detection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hermes.observability import context as ids
from hermes.randomid import uuid4_hex
from hermes.server.errors import SERVER_ERROR, APIError, error_body
from hermes.server.faults import from_fault

log = logging.getLogger("hermes.server")

_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


DRAIN_MAX_BYTES = 64 * 1024 * 1024
"""A refused body up to this size is read to its end before the 413, so the answer arrives."""
DRAIN_SECONDS = 30.0


class BodyTooLargeError(APIError):
    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            f"The request body is larger than the server's limit of {limit:,} "
            "bytes (server.max_body_bytes); send less, e.g. split the content over several "
            "requests.",
            code="request_too_large",
        )


class BodyTimeoutError(APIError):
    def __init__(self, seconds: float) -> None:
        super().__init__(
            408,
            f"The request body did not arrive within {seconds:g} seconds "
            "(server.body_timeout); send it in full without pausing.",
            code="request_timeout",
            headers={"Connection": "close"},
        )


def _content_length(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return bytes(value)
    return None


class HygieneMiddleware:
    """Limits request bodies (declared or chunked), adds security headers, turns crashes into 500s."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        body_timeout: float | None = None,
        home: Path | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.home = home or Path(".")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None:
            if not declared.isdigit():
                await _send_error(
                    send,
                    APIError(
                        400,
                        "The Content-Length header is not a number.",
                        code="invalid_content_length",
                    ),
                )
                return
            if int(declared) > self.max_body_bytes:
                if int(declared) <= DRAIN_MAX_BYTES:
                    await _drain(receive, self.body_timeout)
                await _send_error(send, BodyTooLargeError(self.max_body_bytes))
                return
        started = False
        received = 0
        limit = self.max_body_bytes
        body_done = False
        deadline: float | None = None

        async def limited_receive() -> Message:
            nonlocal received, body_done, deadline
            if body_done or self.body_timeout is None:
                message = await receive()  # waiting for a disconnect: no time limit
            else:
                loop = asyncio.get_running_loop()
                deadline = deadline or loop.time() + self.body_timeout
                try:
                    async with asyncio.timeout_at(deadline):
                        message = await receive()
                except TimeoutError:
                    raise BodyTimeoutError(self.body_timeout) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLargeError(limit)
                body_done = not message.get("more_body", False)
            return message

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", ()), *_SECURITY_HEADERS]
            await send(message)

        try:
            await self.app(scope, limited_receive, send_with_headers)
        except APIError as exc:  # raised outside a route (e.g. by the limit while no route ran)
            if started:
                raise
            if isinstance(exc, BodyTooLargeError):
                await _drain(receive, self.body_timeout)
            await _send_error(send, exc)
        except Exception as exc:
            fault = from_fault(exc, home=self.home)
            if fault is not None:
                log.error("%s %s: %s", scope.get("method"), scope.get("path"), fault.message)
                if started:
                    raise
                await _send_error(send, fault)
                return
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            await _send_error(
                send,
                APIError(
                    500,
                    "Internal server error: Hermes hit an "
                    "unexpected problem; the server log has details.",
                    SERVER_ERROR,
                    "internal_error",
                ),
            )


async def _drain(receive: Receive, seconds: float | None) -> None:
    """Read and drop what is left of a refused request body before answering.

    Closing a socket that still holds unread bytes makes the kernel reset the connection, and
    a client still sending its body then sees "connection reset" instead of the 413. Bounded
    by DRAIN_MAX_BYTES (checked by the caller for a declared length, here for chunked bodies)
    and by the body timeout."""
    left = DRAIN_MAX_BYTES
    try:
        async with asyncio.timeout(seconds or DRAIN_SECONDS):
            while left > 0:
                message = await receive()
                if message["type"] != "http.request":
                    return
                left -= len(message.get("body", b""))
                if not message.get("more_body", False):
                    return
    except TimeoutError:
        return


async def _send_error(send: Send, exc: APIError) -> None:
    payload = json.dumps(error_body(exc.message, exc.type, exc.code, exc.param)).encode()
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *_SECURITY_HEADERS,
    ]
    for name, value in (exc.headers or {}).items():
        headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    if exc.status in (408, 413):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


REQUEST_ID_HEADER = b"x-request-id"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:/@+=-]{1,128}$")


class RequestIdMiddleware:
    """Pure ASGI: the request's id (`X-Request-Id` when the client sent a usable one, else a
    new one) is bound for every log line written while the request runs, and echoed in the
    response header, whatever the log format."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        echoed = (REQUEST_ID_HEADER, request_id.encode("ascii"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", ()) if h[0] != REQUEST_ID_HEADER]
                message["headers"] = [*headers, echoed]
            await send(message)

        with ids.bound(request_id=request_id):
            await self.app(scope, receive, send_with_id)


def _request_id(scope: Scope) -> str:
    """The client's id if it is short and plain (it goes into logs and a header), else new."""
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER:
            text = value.decode("latin-1").strip()
            if _REQUEST_ID.match(text):
                return text
            break
    return uuid4_hex()
