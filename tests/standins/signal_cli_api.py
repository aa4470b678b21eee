"""A loopback stand-in for signal-cli's HTTP daemon (`signal-cli daemon --http`), written from
its manual (signal-cli-jsonrpc(5)): `GET /api/v1/check`, `POST /api/v1/rpc` (JSON-RPC 2.0:
`send` with `recipient` or `groupId`, `sendTyping`), and `GET /api/v1/events`, a Server-Sent
Events stream of `receive` notifications whose events carry ids; a client reconnecting with
`Last-Event-ID` first gets the events after that id. Tests make people write with `user_says`
and read what the bot sent from `sent`."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

from aiohttp import web

from tests.standins.standin import LoopbackServer

UUID_LEN = 36


class SignalCli(LoopbackServer):
    def __init__(self, number: str = "+15550000001") -> None:
        super().__init__()
        self.number = number
        self.typing: list[dict[str, Any]] = []
        self.groups: set[str] = set()
        self._events: list[tuple[int, dict[str, Any]]] = []
        self._ids = itertools.count(1)
        self._clock = itertools.count(int(time.time() * 1000))
        self._streams: dict[web.StreamResponse, web.Request] = {}
        self.rpc_failures: list[tuple[str, int, str]] = []
        self.connections = 0

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v1/check", self._check)
        app.router.add_post("/api/v1/rpc", self._rpc)
        app.router.add_get("/api/v1/events", self._events_stream)

    async def stop(self) -> None:
        await self.drop_streams()
        await super().stop()

    # -- what tests do ---------------------------------------------------------------------

    async def user_says(
        self,
        number: str,
        text: str,
        *,
        group: str | None = None,
        mention: bool = False,
        name: str | None = None,
    ) -> int:
        """A person's message reaches the account; returns its timestamp (Signal's message id)."""
        stamp = next(self._clock)
        message: dict[str, Any] = {"timestamp": stamp, "message": text, "attachments": []}
        if group is not None:
            self.groups.add(group)
            message["groupInfo"] = {"groupId": group, "type": "DELIVER"}
        if mention:
            message["message"] = "\ufffc " + text
            message["mentions"] = [{"start": 0, "length": 1, "number": self.number}]
        envelope = {
            "source": number,
            "sourceNumber": number,
            "sourceUuid": "0f1e2d3c-0000-4000-8000-" + number[-12:].rjust(12, "0"),
            "sourceName": name or number,
            "sourceDevice": 1,
            "timestamp": stamp,
            "dataMessage": message,
        }
        await self._publish({"envelope": envelope, "account": self.number})
        return stamp

    async def receipt(self, number: str) -> None:
        """A delivery receipt: no text, nothing for the bot to answer."""
        envelope = {"source": number, "sourceNumber": number, "timestamp": next(self._clock)}
        await self._publish({"envelope": envelope | {"receiptMessage": {"isDelivery": True}}})

    async def drop_streams(self) -> None:
        """Close every open event stream, as when the daemon's connection breaks."""
        for stream, request in list(self._streams.items()):
            self._streams.pop(stream, None)
            if request.transport is not None:
                request.transport.close()
        async with self._changed:
            self._changed.notify_all()

    def fail_rpc(self, method: str, code: int, message: str) -> None:
        """The next call of `method` answers with this JSON-RPC error."""
        self.rpc_failures.append((method, code, message))

    async def wait_for_sent(self, n: int, within: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + within
        while len(self.sent) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"signal stand-in: expected {n} sent, got {self.sent}")
            await asyncio.sleep(0.01)
        return self.sent

    # -- the daemon ------------------------------------------------------------------------

    async def _publish(self, params: dict[str, Any]) -> None:
        self._events.append((next(self._ids), params))
        self._events = self._events[-1000:]  # signal-cli keeps the last thousand
        async with self._changed:
            self._changed.notify_all()

    async def _check(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def _rpc(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _rpc_error(None, -32700, "Parse error")
        method, params, rid = body.get("method"), body.get("params") or {}, body.get("id")
        for i, (name, code, message) in enumerate(self.rpc_failures):
            if name == method:
                del self.rpc_failures[i]
                return _rpc_error(rid, code, message)
        if method == "send":
            problem = self._send_problem(params)
            if problem:
                return _rpc_error(rid, -32602, problem)
            stamp = next(self._clock)
            self.sent.append(dict(params, timestamp=stamp, sent_at=time.perf_counter()))
            return web.json_response({"jsonrpc": "2.0", "result": {"timestamp": stamp}, "id": rid})
        if method == "sendTyping":
            self.typing.append(dict(params))
            return web.json_response({"jsonrpc": "2.0", "result": {}, "id": rid})
        return _rpc_error(rid, -32601, f"Method not implemented: {method}")

    def _send_problem(self, params: dict[str, Any]) -> str | None:
        if not str(params.get("message") or "").strip():
            return "No message given"
        if "groupId" in params:
            return None if params["groupId"] in self.groups else "Invalid group id"
        recipients = params.get("recipient")
        if not isinstance(recipients, list) or not recipients:
            return "No recipients given"
        for r in recipients:
            if not (str(r).startswith("+") and str(r)[1:].isdigit()) and len(str(r)) != UUID_LEN:
                return f"Invalid number: {r}"
        return None

    async def _events_stream(self, request: web.Request) -> web.StreamResponse:
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        self._streams[stream] = request
        self.connections += 1
        after = int(request.headers.get("Last-Event-ID", "0") or 0)
        if after and not any(i == after for i, _ in self._events):
            after = 0  # an unknown id: every kept event is sent
        try:
            while True:
                pending = [(i, p) for i, p in self._events if i > after]
                for event_id, params in pending:
                    data = json.dumps(params)
                    await stream.write(f"id:{event_id}\nevent:receive\ndata:{data}\n\n".encode())
                    after = event_id
                async with self._changed:
                    await self._changed.wait()
                if stream not in self._streams:
                    break
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._streams.pop(stream, None)
        return stream


def _rpc_error(rid: Any, code: int, message: str) -> web.Response:
    error = {"code": code, "message": message, "data": None}
    return web.json_response({"jsonrpc": "2.0", "error": error, "id": rid})
