"""Model calls to a plain-HTTP endpoint ride Hermes' own keep-alive connections
(`hermes.models.keepalive`): driven through `OpenAICompatClient` against loopback servers that
script the wire byte by byte, for what a general HTTP client would have handled for us."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from hermes.models.client import OpenAICompatClient
from hermes.models.errors import ModelTimeoutError, ModelUnreachableError

USER = [{"role": "user", "content": "hello"}]


def completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()


def answer(body: bytes, *extra: str) -> bytes:
    head = ["HTTP/1.1 200 OK", "Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join([*head, *extra]) + "\r\n\r\n").encode() + body


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's body (they all carry Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return await reader.readexactly(length)


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


def recorder(heads: list[bytes], text: str) -> Handler:
    """A handler that keeps each request's head and answers `text`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _n: int) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.write(answer(completion(text)))
        await writer.drain()

    return handle


@dataclass
class Wire:
    """A loopback HTTP server whose handler gets each connection and its number (from 1)."""

    handler: Handler
    host: str = "127.0.0.1"
    connections: int = 0
    _server: asyncio.Server | None = field(default=None, repr=False)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer, self.connections)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away: what some tests do on purpose
        finally:
            writer.close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._server.sockets[0].getsockname()[1]}/v1"


@pytest.fixture
async def wire() -> AsyncIterator[Callable[..., Awaitable[Wire]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler, host: str = "127.0.0.1") -> Wire:
        w = Wire(handler, host)
        w._server = await asyncio.start_server(w._serve, host, 0)
        servers.append(w._server)
        return w

    yield start
    for server in servers:
        server.close()


def client_for(w: Wire, **kwargs: object) -> OpenAICompatClient:
    options: dict = {"api_key": None, "model": "m", "max_retries": 0, **kwargs}
    return OpenAICompatClient(base_url=w.base_url, **options)


async def test_turns_reuse_one_connection(wire) -> None:
    async def keeps_alive(reader, writer, _n) -> None:
        while True:
            body = json.loads(await read_request(reader))
            writer.write(answer(completion(f"re: {body['messages'][-1]['content']}")))

    w = await wire(keeps_alive)
    client = client_for(w)
    try:
        for i in range(5):
            messages = [{"role": "user", "content": f"n{i}"}]
            assert (await client.complete(messages)).content == f"re: n{i}"
    finally:
        await client.aclose()
    assert w.connections == 1


async def test_a_connection_the_server_closed_while_idle_is_not_reused(wire) -> None:
    """The server closes each connection after its answer without saying so: the close is
    seen while the connection is idle, and the next call takes a new one (no retries are
    allowed, and a request is never sent twice)."""

    async def one_answer_each(reader, writer, n) -> None:
        await read_request(reader)
        writer.write(answer(completion(f"connection {n}")))
        await writer.drain()

    w = await wire(one_answer_each)
    client = client_for(w)
    try:
        for n in (1, 2, 3):
            assert (await client.complete(USER)).content == f"connection {n}"
            await asyncio.sleep(0.05)  # the close reaches the client while it is idle
    finally:
        await client.aclose()
    assert w.connections == 3


async def test_a_request_is_never_sent_twice(wire) -> None:
    """The connection breaks with no answer (a model that crashed on the request): the call
    fails, and the model saw the request once, even on a reused connection."""
    seen: list[int] = []

    async def answers_then_crashes(reader, writer, _n) -> None:
        await read_request(reader)
        writer.write(answer(completion("first")))
        await writer.drain()
        await read_request(reader)
        seen.append(1)  # the second request reached the model, which then went down

    w = await wire(answers_then_crashes)
    client = client_for(w)
    try:
        assert (await client.complete(USER)).content == "first"
        with pytest.raises(ModelUnreachableError, match="connection failed"):
            await client.complete(USER)
    finally:
        await client.aclose()
    assert seen == [1]
    assert w.connections == 1


async def test_chunked_gzip_and_close_delimited_answers_are_read_whole(wire) -> None:
    text = "a long answer " * 500
    body = completion(text)
    zipped = gzip.compress(body)

    async def three_ways(reader, writer, n) -> None:
        await read_request(reader)
        if n == 1:  # chunked, in pieces
            writer.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            )
            for i in range(0, len(body), 1000):
                piece = body[i : i + 1000]
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
            writer.write(b"0\r\n\r\n")
        elif n == 2:
            writer.write(answer(zipped, "Content-Encoding: gzip", "Connection: close"))
        else:  # HTTP/1.0 style: the end of the connection ends the body
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body)
        await writer.drain()

    w = await wire(three_ways)
    client = client_for(w)
    try:
        for _ in range(3):
            assert (await client.complete(USER)).content == text
    finally:
        await client.aclose()
    assert w.connections == 3


async def test_an_answer_broken_off_is_an_unreachable_model_not_a_resend(wire) -> None:
    """Half an answer then a hang-up: a typed error; the request is not sent again (it reached
    the model, which may have acted on it)."""

    async def breaks_off(reader, writer, _n) -> None:
        await read_request(reader)
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"id":')
        await writer.drain()

    w = await wire(breaks_off)
    client = client_for(w)
    try:
        with pytest.raises(ModelUnreachableError, match="connection failed"):
            await client.complete(USER)
    finally:
        await client.aclose()
    assert w.connections == 1


async def test_silence_after_the_request_is_a_timeout_but_a_slow_trickle_is_not(wire) -> None:
    body = completion("slowly")

    async def trickles_then_stalls(reader, writer, n) -> None:
        await read_request(reader)
        if n == 1:  # each piece within the timeout, the whole well beyond it
            for i in range(0, 8):
                await asyncio.sleep(0.15)
                writer.write(answer(body)[i * 40 : (i + 1) * 40])
                await writer.drain()
            writer.write(answer(body)[320:])
            await writer.drain()
            await read_request(reader)
        await asyncio.sleep(5)  # the second request gets nothing

    w = await wire(trickles_then_stalls)
    client = client_for(w, timeout=0.5)
    try:
        assert (await client.complete(USER)).content == "slowly"
        with pytest.raises(ModelTimeoutError, match="did not answer within 0.5s"):
            await client.complete(USER)
    finally:
        await client.aclose()


async def test_a_cancelled_call_never_hands_its_answer_to_the_next(wire) -> None:
    """A turn cancelled mid-call (its client went away) drops the connection: the late answer
    cannot be read as the next call's."""

    async def answers_late_first(reader, writer, n) -> None:
        while True:
            content = json.loads(await read_request(reader))["messages"][-1]["content"]
            if content == "first":
                await asyncio.sleep(0.3)
            writer.write(answer(completion(f"re: {content}")))
            await writer.drain()

    w = await wire(answers_late_first)
    client = client_for(w)
    try:
        call = asyncio.create_task(client.complete([{"role": "user", "content": "first"}]))
        await asyncio.sleep(0.1)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        second = await client.complete([{"role": "user", "content": "second"}])
        assert second.content == "re: second"
    finally:
        await client.aclose()
    assert w.connections == 2


async def test_concurrent_calls_each_get_their_own_answer(wire) -> None:
    async def echo(reader, writer, _n) -> None:
        while True:
            content = json.loads(await read_request(reader))["messages"][-1]["content"]
            await asyncio.sleep(0.01)
            writer.write(answer(completion(f"re: {content}")))

    w = await wire(echo)
    client = client_for(w)
    try:
        for _ in range(3):
            results = await asyncio.gather(
                *(client.complete([{"role": "user", "content": f"c{i}"}]) for i in range(8))
            )
            assert [r.content for r in results] == [f"re: c{i}" for i in range(8)]
    finally:
        await client.aclose()
    assert w.connections == 8  # one per call in flight, then reused


async def test_the_request_carries_host_length_and_the_key(wire) -> None:
    seen: list[bytes] = []
    w = await wire(recorder(seen, "ok"))
    client = client_for(w, api_key="sk-test-key")
    try:
        await client.complete(USER)
    finally:
        await client.aclose()
    lines = seen[0].decode().split("\r\n")
    port = w.base_url.split(":")[2].split("/")[0]
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
    assert f"Host: 127.0.0.1:{port}" in lines
    assert "Authorization: Bearer sk-test-key" in lines
    assert any(line.startswith("User-Agent: hermes/") for line in lines)


async def test_an_ipv6_endpoint_is_reached_and_named_in_brackets(wire) -> None:
    seen: list[bytes] = []
    w = await wire(recorder(seen, "over v6"), "::1")
    client = client_for(w)
    try:
        assert (await client.complete(USER)).content == "over v6"
    finally:
        await client.aclose()
    port = w.base_url.rsplit(":", 1)[1].split("/")[0]
    assert f"Host: [::1]:{port}" in seen[0].decode().split("\r\n")


def sse_answer(texts: list[str], *, split: int = 7, crlf: bool = True) -> list[bytes]:
    """A streamed completion of `texts`, chunked encoding, cut into pieces of `split` bytes
    (events and line ends land across pieces), with a comment and a two-line event."""
    end = "\r\n" if crlf else "\n"
    events = [f": keep-alive{end}{end}"]
    for text in texts:
        chunk = {"object": "chat.completion.chunk", "model": "m"}
        chunk["choices"] = [{"index": 0, "delta": {"content": text}, "finish_reason": None}]
        raw = json.dumps(chunk)
        half = raw.index(",") + 1  # one event over two `data:` lines, joined by a newline
        events.append(f"data: {raw[:half]}{end}data:{raw[half:]}{end}{end}")
    events.append(f"data: [DONE]{end}{end}")
    body = "".join(events).encode()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    wire = b"".join(
        f"{len(p):x}\r\n".encode() + p + b"\r\n"
        for p in [body[i : i + split] for i in range(0, len(body), split)]
    )
    out = head + wire + b"0\r\n\r\n"
    return [out[i : i + split * 3] for i in range(0, len(out), split * 3)]


async def test_streamed_answers_arrive_whole_and_the_connection_is_reused(wire) -> None:
    texts = ["Hel", "lo, ", "wor", "ld"]

    async def streams(reader, writer, _n) -> None:
        for crlf in (True, False, True):
            await read_request(reader)
            for piece in sse_answer(texts, crlf=crlf):
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0)

    w = await wire(streams)
    client = client_for(w)
    deltas: list[str] = []
    try:
        for _ in range(3):
            result = await client.complete(USER, on_delta=deltas.append)
            assert result.content == "".join(texts)
    finally:
        await client.aclose()
    # a text delta may join pieces, but never loses or reorders one
    assert "".join(deltas) == "".join(texts) * 3
    assert w.connections == 1


async def test_a_stream_cancelled_midway_drops_its_connection(wire) -> None:
    async def slow_then_fast(reader, writer, n) -> None:
        await read_request(reader)
        pieces = sse_answer(["one", "two"])
        if n == 1:
            writer.write(pieces[0])
            await writer.drain()
            await asyncio.sleep(5)  # the rest never comes in time
        for piece in pieces:
            writer.write(piece)
        await writer.drain()
        await asyncio.sleep(5)

    w = await wire(slow_then_fast)
    client = client_for(w)
    try:
        call = asyncio.create_task(client.complete(USER, on_delta=lambda _t: None))
        await asyncio.sleep(0.2)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert (await client.complete(USER, on_delta=lambda _t: None)).content == "onetwo"
    finally:
        await client.aclose()
    assert w.connections == 2
