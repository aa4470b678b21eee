"""Plain-HTTP/1.1 requests to one model endpoint over keep-alive connections, on the event
loop's own protocol.

Every API turn makes one POST to the model; through aiohttp's general client that request cost
more of the event loop's CPU than any other step of a turn (`bench/upstream_client.py`). Here a
request is the head and body written in one go and the answer parsed by httptools (the parser
uvicorn uses, installed with it): no per-request objects beyond a future and a few lists.

Only `http://` endpoints without a proxy come here (`KeepAliveClient.serves`); TLS and proxies
stay with aiohttp, whose features they need.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import httptools
from yarl import URL

from hermes.errors import HermesError

IDLE_SECONDS = 15.0
"""An idle connection older than this is closed rather than reused (aiohttp's keep-alive
timeout): servers drop idle connections, and a request on a dropped one fails."""
MAX_IDLE = 64
"""Idle connections kept; beyond this a finished connection is closed."""


class Headers(Mapping[str, str]):
    """Response headers, looked up case-insensitively (the first of repeated names)."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._items: dict[str, str] = {}
        for name, value in raw:
            self._items.setdefault(name.decode("latin-1").lower(), value.decode("latin-1").strip())

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __iter__(self) -> Any:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Headers
    body: bytes


class ConnectionBroken(HermesError, ConnectionError):
    """The connection ended or broke before a whole answer arrived."""

    def __init__(self, message: str, *, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered
        """Whether any byte of an answer had arrived (a request on a connection the server
        had already dropped gets none, and is safe to send again on a new one)."""


class ReadTimeout(HermesError, TimeoutError):
    """No byte of the answer arrived for `timeout` seconds."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, its answer parsed as it arrives."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._received = False
        self._complete = False
        self._until_eof = False
        self._last_read = 0.0
        self._timer: asyncio.TimerHandle | None = None

    # --- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self._received = True
        self._last_read = time.monotonic()
        if self._waiter is None:  # bytes nobody asked for: the connection is not reusable
            self._close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionBroken(f"malformed HTTP answer: {exc}", answered=True))

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost finishes or fails the answer

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._cancel_timer()
        if self._waiter is None or self._waiter.done():
            return
        if self._until_eof and not self._complete:  # an answer delimited by the end
            self.on_message_complete()
            return
        reason = f"connection closed: {exc}" if exc else "connection closed by the server"
        self._fail(ConnectionBroken(reason, answered=self._received))

    # --- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        names = {name.lower() for name, _ in self._headers}
        self._until_eof = b"content-length" not in names and b"transfer-encoding" not in names

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._complete = True
        self._cancel_timer()
        headers = Headers(self._headers)
        body = _decoded(b"".join(self._body), headers.get("content-encoding", ""))
        status = self._parser.get_status_code()
        if not self._parser.should_keep_alive() or self._until_eof:
            self._close()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(Answer(status, headers, body))

    # --- requests
    async def send(self, head: bytes, body: bytes | None) -> Answer:
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        self._headers, self._body = [], []
        self._received = self._complete = self._until_eof = False
        self._parser = httptools.HttpResponseParser(self)
        self._last_read = time.monotonic()
        self._timer = loop.call_later(self.timeout, self._check_read)
        self.transport.write(head + body if body else head)
        try:
            return await waiter
        except BaseException:
            self._close()  # cancelled or failed midway: what is on the wire is unknown
            raise
        finally:
            self._waiter = None

    def _check_read(self) -> None:
        """The read timeout: each read may take `timeout`, like the SDK's and aiohttp's."""
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        assert self.transport is not None
        quiet = time.monotonic() - self._last_read
        if self.transport.get_write_buffer_size() > 0:  # still sending a large body
            self._last_read = time.monotonic()
            quiet = 0.0
        if quiet >= self.timeout:
            self._fail(ReadTimeout(f"no answer within {self.timeout:g} s"))
        else:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.timeout - quiet, self._check_read)

    def _fail(self, exc: Exception) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self._close()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close(self) -> None:
        self.closed = True
        self._cancel_timer()
        if self.transport is not None:
            self.transport.close()


def _decoded(body: bytes, encoding: str) -> bytes:
    """The body without its content coding: none is asked for, but a server may send one."""
    coding = encoding.strip().lower()
    if coding == "gzip":
        return zlib.decompress(body, wbits=zlib.MAX_WBITS | 16)
    if coding == "deflate":
        try:
            return zlib.decompress(body)
        except zlib.error:  # raw deflate, as some servers send it
            return zlib.decompress(body, wbits=-zlib.MAX_WBITS)
    return body


class KeepAliveClient:
    """Requests to one `http://` origin, with the same headers each time; connections are
    reused, most recently used first."""

    def __init__(self, origin: URL, *, headers: Mapping[str, str], timeout: float) -> None:
        if origin.scheme != "http" or not origin.host:
            raise ValueError(f"not a plain-HTTP origin: {origin}")
        self.host = origin.raw_host or origin.host
        self.port = origin.port or 80
        self.timeout = timeout
        host_header = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 literal
        if not origin.is_default_port():
            host_header += f":{self.port}"
        fixed = {"Host": host_header, **headers}
        self._fixed = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self._idle: list[_Connection] = []

    @staticmethod
    def serves(url: URL, proxy: str | None) -> bool:
        """Plain HTTP, no proxy, and no user or password in the URL (aiohttp sends those as
        Basic auth)."""
        return (
            url.scheme == "http"
            and bool(url.host)
            and proxy is None
            and url.user is None
            and url.password is None
        )

    async def request(self, method: str, target: str, body: bytes | None) -> Answer:
        """`target` is the path and query. A request on a reused connection the server had
        dropped (nothing answered) is sent once more on a new connection."""
        length = f"Content-Length: {len(body)}\r\n" if body is not None else ""
        head = f"{method} {target} HTTP/1.1\r\n{self._fixed}{length}\r\n".encode("latin-1")
        connection, reused = self._reusable(), True
        if connection is None:
            connection, reused = await self._connect(), False
        try:
            answer = await connection.send(head, body)
        except ConnectionBroken as exc:
            if not reused or exc.answered:
                raise
            connection = await self._connect()
            answer = await connection.send(head, body)
        self._release(connection)
        return answer

    def _reusable(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if connection.closed:
                continue
            if now - connection.idle_since > IDLE_SECONDS:
                connection._close()
                continue
            return connection
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        _, connection = await asyncio.wait_for(
            loop.create_connection(lambda: _Connection(self.timeout), self.host, self.port),
            self.timeout,
        )
        return connection

    def _release(self, connection: _Connection) -> None:
        if connection.closed or len(self._idle) >= MAX_IDLE:
            connection._close()
            return
        connection.idle_since = time.monotonic()
        self._idle.append(connection)

    def close(self) -> None:
        while self._idle:
            self._idle.pop()._close()
