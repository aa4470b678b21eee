"""SSE streaming of one agent turn as `chat.completion.chunk` events, as a pure-ASGI response.

Order on the wire: a role chunk, content deltas interleaved with `event: hermes.tool.progress`
frames (tool name and status only), a final chunk with `finish_reason` and `usage`, then
`data: [DONE]`. Headers are sent only once the turn has produced something, so a turn that
fails before its first token (model down, bad key) still gets a real HTTP status and envelope.
A client disconnect cancels the turn; the agent stores what was already said.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from hermes.agent.turn import TurnObserver, TurnResult
from hermes.server.errors import SERVER_ERROR, APIError, from_turn_error
from hermes.server.faults import from_fault
from hermes.server.openai_compat import ChunkWriter

log = logging.getLogger("hermes.server")

KEEPALIVE_SECONDS = 15.0
_DISCONNECTED = object()
_FINISHED = object()


class StreamFormat(Protocol):
    """The wire format of one streamed turn: Chat Completions chunks or Responses events."""

    def opening(self) -> bytes:
        """Frames sent as soon as the turn has produced something."""
        ...

    def delta(self, text: str) -> bytes: ...

    def tool_progress(self, tool: str, call_id: str, status: str) -> bytes: ...

    def closing(self, result: TurnResult, streamed: bool) -> bytes:
        """The end of a finished turn; `streamed` says whether its text went out as deltas."""
        ...

    def failure(self, err: APIError) -> bytes:
        """The end of a turn that failed after the stream had started."""
        ...


class ChatChunks:
    """`chat.completion.chunk` frames: a role chunk, deltas, the caller's tool calls of a
    paused turn, a final chunk with `finish_reason` and `usage`, then `[DONE]`."""

    def __init__(self, writer: ChunkWriter) -> None:
        self.writer = writer

    def opening(self) -> bytes:
        return self.writer.chunk({"role": "assistant", "content": ""})

    def delta(self, text: str) -> bytes:
        return self.writer.chunk({"content": text})

    def tool_progress(self, tool: str, call_id: str, status: str) -> bytes:
        return self.writer.tool_progress(tool, call_id, status)

    def closing(self, result: TurnResult, streamed: bool) -> bytes:
        out = b""
        if not streamed and result.content:
            out += self.writer.chunk({"content": result.content})
        if result.tool_calls:
            out += self.writer.tool_calls(result.tool_calls)
        out += self.writer.chunk({}, result.finish_reason or "stop", result.usage)
        return out + ChunkWriter.DONE

    def failure(self, err: APIError) -> bytes:
        return self.writer.error(err) + ChunkWriter.DONE


class _QueueObserver(TurnObserver):
    """Turns agent callbacks into queued SSE frames (called on the event loop thread)."""

    def __init__(self, queue: asyncio.Queue[Any], writer: StreamFormat) -> None:
        self.queue = queue
        self.writer = writer
        self.streamed = False
        self._running: set[str] = set()

    def on_delta(self, text: str) -> None:
        if text:
            self.streamed = True
            self.queue.put_nowait(self.writer.delta(text))

    def on_tool_start(self, call_id: str, name: str) -> None:
        if name.startswith("_"):
            return
        self._running.add(call_id)
        self.queue.put_nowait(self.writer.tool_progress(name, call_id, "running"))

    def on_tool_end(self, call_id: str, name: str, ok: bool) -> None:
        if call_id not in self._running:
            return
        self._running.discard(call_id)
        status = "completed" if ok else "failed"
        self.queue.put_nowait(self.writer.tool_progress(name, call_id, status))


TurnRunner = Callable[[TurnObserver], Awaitable[TurnResult]]


class TurnStreamResponse(Response):
    """Runs the turn while streaming it; cancels it when the client goes away."""

    def __init__(
        self, run: TurnRunner, writer: StreamFormat | ChunkWriter, headers: dict[str, str]
    ) -> None:
        super().__init__(
            content=None,
            status_code=200,
            headers=headers,
            media_type="text/event-stream; charset=utf-8",
        )
        self._run = run
        self._home = Path(".")  # where Hermes writes, named by a disk-full error (set per call)
        self._writer: StreamFormat = (
            ChatChunks(writer) if isinstance(writer, ChunkWriter) else writer
        )
        self.raw_headers = [h for h in self.raw_headers if h[0] != b"content-length"]
        self.raw_headers += [(b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope.get("app")
        runtime = getattr(app.state, "runtime", None) if app is not None else None
        self._home = runtime.settings.home if runtime is not None else Path(".")
        queue: asyncio.Queue[Any] = asyncio.Queue()
        observer = _QueueObserver(queue, self._writer)
        turn = asyncio.ensure_future(self._run(observer))
        turn.add_done_callback(lambda _: queue.put_nowait(_FINISHED))
        watcher = asyncio.ensure_future(_watch_disconnect(receive, queue))
        try:
            await self._pump(queue, turn, observer, send)
        finally:
            watcher.cancel()
            if not turn.done():
                turn.cancel()
            # Wait for the cancelled turn, so what it already said is stored before we return.
            await asyncio.gather(turn, watcher, return_exceptions=True)

    async def _pump(
        self,
        queue: asyncio.Queue[Any],
        turn: asyncio.Future[TurnResult],
        observer: _QueueObserver,
        send: Send,
    ) -> None:
        first = await queue.get()
        if first is _DISCONNECTED:
            return
        if first is _FINISHED and turn.exception() is not None:
            err = _as_api_error(turn.exception(), self._home)
            await err.response()({"type": "http"}, _never_receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        frames = [self._writer.opening()]
        item = first
        while True:
            if item is _DISCONNECTED:
                return
            if item is _FINISHED:
                frames.append(self._ending(turn, observer))
                await _send_body(send, b"".join(frames), more=False)
                return
            frames.append(item)
            while not queue.empty():  # coalesce whatever is ready into one write
                nxt = queue.get_nowait()
                if nxt is _FINISHED or nxt is _DISCONNECTED:
                    queue.put_nowait(nxt)
                    break
                frames.append(nxt)
            if not await _send_body(send, b"".join(frames), more=True):
                return
            frames = []
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                item = b": keepalive\n\n"

    def _ending(self, turn: asyncio.Future[TurnResult], observer: _QueueObserver) -> bytes:
        exc = turn.exception()
        if exc is not None:
            return self._writer.failure(_as_api_error(exc, self._home))
        return self._writer.closing(turn.result(), observer.streamed)


def _as_api_error(exc: BaseException | None, home: Path) -> APIError:
    """The envelope for a failed turn: a known failure's own, a machine fault's (a full disk
    is a 507 here as on the non-streamed path), else a logged 500."""
    err = from_turn_error(exc) if isinstance(exc, Exception) else None
    if err is None and exc is not None:
        err = from_fault(exc, home=home)
        if err is not None:
            log.error("streamed turn: %s", err.message)
    if err is None:
        log.error("streamed turn failed", exc_info=exc)
        err = APIError(
            500,
            "Internal server error: the turn failed unexpectedly; the server log has details.",
            SERVER_ERROR,
            "internal_error",
        )
    return err


async def _send_body(send: Send, body: bytes, *, more: bool) -> bool:
    """False when the client has gone (the write failed)."""
    try:
        await send({"type": "http.response.body", "body": body, "more_body": more})
    except OSError:
        return False
    return True


async def _watch_disconnect(receive: Receive, queue: asyncio.Queue[Any]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            queue.put_nowait(_DISCONNECTED)
            return


async def _never_receive() -> dict[str, Any]:
    await asyncio.Event().wait()
    return {}
