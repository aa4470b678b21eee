"""Plain-HTTP/1.1 requests to one model endpoint over keep-alive connections, on the event
loop's own protocol.

Every API turn makes one POST to the model; through aiohttp's general client that request cost
more of the event loop's CPU than any other step of a turn (`bench/upstream_client.py`). Here a
request is the head and body written in one go and the answer parsed by httptools (the parser
uvicorn uses, installed with it): no per-request objects beyond a future and a few lists.

A streamed answer (`KeepAliveClient.open_stream`) is handed over piece by piece as it arrives;
`hermes.models.sse` reads the events out of it.

Only `http://` endpoints without a proxy come here (`KeepAliveClient.serves`); TLS and proxies
stay with aiohttp and the SDK, whose features they need.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import httptools
from yarl import URL

from hermes.errors import HermesError

IDLE_SECONDS = 4.0
"""An idle connection older than this is closed rather than reused. Servers drop idle
connections (uvicorn, behind vLLM and most Python model servers, after 5 s), and a request
sent as the server closes fails; a close that came earlier was seen (`closed`)."""
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


class ReadTimeout(HermesError, TimeoutError):
    """No byte of the answer arrived for `timeout` seconds."""


class _Pieces:
    """A streamed body as it arrives: what the reader has not taken yet, and how it ended."""

    def __init__(self, coding: str) -> None:
        self.waiting: list[bytes] = []
        self.done = False
        self.error: Exception | None = None
        self.wake: asyncio.Future[None] | None = None
        coding = coding.strip().lower()
        self._inflate = (
            zlib.decompressobj(wbits=zlib.MAX_WBITS | 32) if coding in ("gzip", "deflate") else None
        )

    def add(self, piece: bytes) -> None:
        self.waiting.append(self._inflate.decompress(piece) if self._inflate else piece)
        self._wake()

    def end(self, error: Exception | None = None) -> None:
        if not self.done:
            self.done, self.error = True, error
        self._wake()

    def _wake(self) -> None:
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, its answer parsed as it arrives
    (whole, or piece by piece for a stream)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._complete = False
        self._until_eof = False
        self._last_read = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._busy = False
        """An answer is expected: bytes may arrive and the read timeout runs."""
        self._streaming = False
        self.pieces: _Pieces | None = None

    # --- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self._last_read = time.monotonic()
        if not self._busy:  # bytes nobody asked for: the connection is not reusable
            self._close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionBroken(f"malformed HTTP answer: {exc}"))

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost finishes or fails the answer

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._cancel_timer()
        if not self._busy:
            return
        if self._until_eof and not self._complete:  # an answer delimited by the end
            self.on_message_complete()
            return
        reason = f"connection closed: {exc}" if exc else "connection closed by the server"
        self._fail(ConnectionBroken(reason))

    # --- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        names = {name.lower() for name, _ in self._headers}
        self._until_eof = b"content-length" not in names and b"transfer-encoding" not in names
        if self._streaming:  # the head is the answer to `start`; the body follows in pieces
            headers = Headers(self._headers)
            self.pieces = _Pieces(headers.get("content-encoding", ""))
            waiter = self._waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(Answer(self._parser.get_status_code(), headers, b""))

    def on_body(self, body: bytes) -> None:
        if self.pieces is not None:
            self.pieces.add(body)
        else:
            self._body.append(body)

    def on_message_complete(self) -> None:
        self._complete = True
        self._busy = False
        self._cancel_timer()
        if not self._parser.should_keep_alive() or self._until_eof:
            self._close()
        if self.pieces is not None:
            self.pieces.end()
            return
        headers = Headers(self._headers)
        body = _decoded(b"".join(self._body), headers.get("content-encoding", ""))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(Answer(self._parser.get_status_code(), headers, body))

    # --- requests
    async def send(self, head: bytes, body: bytes | None, *, stream: bool = False) -> Answer:
        """The whole answer; with `stream`, its status and headers, the body then coming
        into `pieces`."""
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        self._headers, self._body = [], []
        self._complete = self._until_eof = False
        self._busy, self._streaming, self.pieces = True, stream, None
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

    async def next_pieces(self) -> bytes | None:
        """What a streamed body has brought since the last call, waiting for something;
        None at its end."""
        pieces = self.pieces
        assert pieces is not None, "send(stream=True) first"
        while not pieces.waiting:
            if pieces.error is not None:
                raise pieces.error
            if pieces.done:
                return None
            pieces.wake = asyncio.get_running_loop().create_future()
            try:
                await pieces.wake
            except BaseException:
                self._close()  # cancelled mid-body: the rest of it is unknown
                raise
            finally:
                pieces.wake = None
        taken = b"".join(pieces.waiting)
        pieces.waiting.clear()
        return taken

    def _check_read(self) -> None:
        """The read timeout: each read may take `timeout`, like the SDK's and aiohttp's."""
        self._timer = None
        if not self._busy:
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
        self._busy = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        if self.pieces is not None:
            self.pieces.end(exc)
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
        if self._busy and self.pieces is not None:  # closed by us mid-body
            self._busy = False
            self.pieces.end(ConnectionBroken("connection closed"))


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
        """`target` is the path and query."""
        connection, answer = await self._exchange(method, target, body, stream=False)
        self._release(connection)
        return answer

    async def open_stream(self, method: str, target: str, body: bytes | None) -> Stream:
        """The answer's status and headers; its body is read from the `Stream`, which must be
        closed (its connection is reused only if the body was read to its end)."""
        connection, head = await self._exchange(method, target, body, stream=True)
        return Stream(self, connection, head)

    async def _exchange(
        self, method: str, target: str, body: bytes | None, *, stream: bool
    ) -> tuple[_Connection, Answer]:
        """Send on a reused connection, or a new one. A request is never sent twice here: a
        connection that breaks without an answer may have carried it to a model that then
        crashed (the retry policy decides), and connections are reused only while the
        server cannot have closed them unseen (`IDLE_SECONDS`)."""
        length = f"Content-Length: {len(body)}\r\n" if body is not None else ""
        head = f"{method} {target} HTTP/1.1\r\n{self._fixed}{length}\r\n".encode("latin-1")
        connection = self._reusable() or await self._connect()
        return connection, await connection.send(head, body, stream=stream)

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


class Stream:
    """A streamed answer: status and headers now, the body piece by piece."""

    def __init__(self, client: KeepAliveClient, connection: _Connection, head: Answer) -> None:
        self.status = head.status
        self.headers = head.headers
        self._client = client
        self._connection = connection
        self._closed = False

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body as it arrives; raises `ConnectionBroken` or `ReadTimeout` if it stops
        before its end."""
        while (piece := await self._connection.next_pieces()) is not None:
            yield piece

    async def read(self) -> bytes:
        """The rest of the body (an error answer's, say)."""
        return b"".join([piece async for piece in self.pieces()])

    def close(self) -> None:
        """Give the connection back if the body was read to its end, else close it."""
        if self._closed:
            return
        self._closed = True
        pieces = self._connection.pieces
        if pieces is not None and pieces.done and pieces.error is None and not pieces.waiting:
            self._client._release(self._connection)
        else:
            self._connection._close()
