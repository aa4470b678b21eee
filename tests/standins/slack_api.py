"""A loopback stand-in for Slack's Web API and Socket Mode, written from Slack's public docs, so
the official slack_sdk can be tested without the internet.

* `POST /api/{method}` with the token as `Authorization: Bearer` or a `token` field (form, query
  or JSON): `auth.test`, `apps.connections.open` (app-level token → a `wss`-style URL of this
  server), `chat.postMessage`, `chat.update`, `reactions.add`, `reactions.remove`. Answers use
  Slack's envelope `{"ok": true, …}` / `{"ok": false, "error": "…"}`; scripted failures can
  be HTTP 429 with `Retry-After` (rate limits) or `ok: false` errors.
* `GET /files-pri/{team}-{file id}/{name}` serves a shared file's bytes (`url_private_download`)
  to the bot token only; `share(...)` makes the file object a `file_share` message carries.
* `GET /socket` is the Socket Mode websocket: it greets with `{"type": "hello"}`, pushes
  envelopes (`events_api`, `slash_commands`) with an `envelope_id`, and records the acks the
  app must send back. `drop()` closes the socket as Slack does on a refresh.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from typing import Any

from aiohttp import WSMsgType, web

from tests.standins.standin import LoopbackServer

TEAM = "T0TEST"
BOT_USER = "UBOT0001"


class SlackAPI(LoopbackServer):
    def __init__(
        self, bot_token: str = "xoxb-test-token", app_token: str = "xapp-test-token"
    ) -> None:
        super().__init__()
        self.bot_token = bot_token
        self.app_token = app_token
        self.reactions: list[tuple[str, dict[str, Any]]] = []
        self.updates: list[dict[str, Any]] = []
        self.acks: list[str] = []
        self.connections = 0
        self._sockets: list[web.WebSocketResponse] = []
        self._ts = itertools.count(1)
        self._connected = asyncio.Condition()
        self.files: dict[str, tuple[bytes, str]] = {}
        self.downloads: list[str] = []

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/socket", self._socket)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/files-pri/{team_file}/{name}", self._file)

    # -- files -----------------------------------------------------------------------------

    def share(self, data: bytes, name: str, mimetype: str, **extra: Any) -> dict[str, Any]:
        """A file object as Slack puts it in `event.files` (`subtype: file_share`)."""
        file_id = f"F{next(self._ts):08d}"
        self.files[file_id] = (data, mimetype)
        url = f"{self.base_url}/files-pri/{TEAM}-{file_id}/{name}"
        return {
            "id": file_id,
            "name": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": len(data),
            "url_private": url,
            "url_private_download": url + "?download=1",
            **extra,
        }

    async def _file(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        file_id = request.match_info["team_file"].partition("-")[2]
        if token != self.bot_token or file_id not in self.files:
            # Slack answers an unauthorised download with its sign-in page, not the bytes
            return web.Response(status=302, headers={"Location": "/signin"})
        self.downloads.append(file_id)
        data, mimetype = self.files[file_id]
        return web.Response(body=data, content_type=mimetype)

    # -- Web API ---------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        fields: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            fields.update(await request.json())
        else:
            fields.update(await request.post())
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or fields.get(
            "token"
        )
        wanted = self.app_token if method == "apps.connections.open" else self.bot_token
        if token != wanted:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        failed = self.failure(method)
        if failed is not None:
            return failed
        return web.json_response(await self._answer(method, fields))

    async def _answer(self, method: str, fields: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"ok": True, "user_id": BOT_USER, "team_id": TEAM, "bot_id": "B0TEST"}
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket?ticket={uuid.uuid4()}"}
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            await self.record({**fields, "ts": ts})
            return {"ok": True, "channel": fields.get("channel"), "ts": ts}
        if method == "chat.update":
            self.updates.append(dict(fields))
            self.revise(
                {"channel": fields.get("channel"), "ts": fields.get("ts")},
                "text",
                str(fields.get("text", "")),
            )
            return {"ok": True, "channel": fields.get("channel"), "ts": fields.get("ts")}
        if method in ("reactions.add", "reactions.remove"):
            self.reactions.append((method, dict(fields)))
            return {"ok": True}
        return {"ok": False, "error": "unknown_method"}

    # -- Socket Mode -----------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.connections += 1
        self._sockets.append(ws)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "connection_info": {"app_id": "A0TEST"},
                "debug_info": {"host": "standin", "approximate_connection_time": 18060},
            }
        )
        async with self._connected:
            self._connected.notify_all()
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    envelope = json.loads(msg.data).get("envelope_id")
                    if envelope:
                        self.acks.append(envelope)
        finally:
            if ws in self._sockets:
                self._sockets.remove(ws)
        return ws

    async def wait_connected(self, count: int = 1, within: float = 10.0) -> None:
        async with self._connected:
            await asyncio.wait_for(
                self._connected.wait_for(lambda: self.connections >= count and self._sockets),
                within,
            )

    async def drop(self) -> None:
        """Close every open socket (the app must open a new one with apps.connections.open)."""
        for ws in list(self._sockets):
            await ws.close()

    async def push(self, kind: str, payload: dict[str, Any]) -> str:
        await self.wait_connected(self.connections or 1)
        envelope = str(uuid.uuid4())
        body = {
            "envelope_id": envelope,
            "type": kind,
            "accepts_response_payload": kind == "slash_commands",
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": payload,
        }
        await self._sockets[-1].send_json(body)
        return envelope

    async def event(self, event: dict[str, Any], team: str = TEAM) -> str:
        ts = event.setdefault("ts", f"1699999999.{next(self._ts):06d}")
        event.setdefault("event_ts", ts)
        payload = {
            "token": "verification",
            "team_id": team,
            "api_app_id": "A0TEST",
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{uuid.uuid4().hex[:10]}",
            "event_time": 1700000000,
        }
        return await self.push("events_api", payload)

    async def dm(self, user: str, text: str, **extra: Any) -> str:
        event = {"type": "message", "channel": f"D{user}", "channel_type": "im", "user": user}
        return await self.event({**event, "text": text, **extra})

    async def mention(self, user: str, channel: str, text: str, **extra: Any) -> str:
        event = {"type": "app_mention", "channel": channel, "user": user}
        return await self.event({**event, "text": f"<@{BOT_USER}> {text}", **extra})

    async def slash(self, user: str, channel: str, command: str, text: str = "") -> str:
        payload = {
            "token": "verification",
            "team_id": TEAM,
            "channel_id": channel,
            "user_id": user,
            "user_name": "tester",
            "command": command,
            "text": text,
            "response_url": f"http://127.0.0.1:{self.port}/response",
            "trigger_id": "1.2.3",
        }
        return await self.push("slash_commands", payload)

    def texts(self) -> list[str]:
        return [str(m["text"]) for m in self.sent]
