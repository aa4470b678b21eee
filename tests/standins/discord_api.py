"""A loopback stand-in for Discord's REST API (v10) and gateway, written from Discord's public
developer docs, so discord.py can be tested without the internet.

REST (`Authorization: Bot <token>`): `GET /api/v10/users/@me` (login check; 401 otherwise),
`GET /api/v10/gateway/bot` (the websocket URL of this server), `POST
/api/v10/channels/{id}/messages` (content ≤ 2,000 characters, else 400 code 50035), `PATCH
…/messages/{id}`, `POST /api/v10/channels/{id}/typing` (204). Scripted failures can be 429s
with Discord's `{"message", "retry_after", "global"}` body and rate-limit headers.

Gateway (`/ws`): HELLO (op 10) → the client's IDENTIFY (op 2) → READY (op 0) and one
GUILD_CREATE with a text channel and a thread; heartbeats (op 1) are ACKed (op 11); RESUME
(op 6) is answered with RESUMED. `user_says(...)` dispatches MESSAGE_CREATE; `drop()` closes the
socket with a resumable close code (4000), as Discord does when it restarts a gateway node.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from aiohttp import WSMsgType, web

from tests.standins.standin import LoopbackServer, json_response

BOT_ID = "900000000000000001"
GUILD = "910000000000000001"
CHANNEL = "920000000000000001"
THREAD = "930000000000000001"


class DiscordAPI(LoopbackServer):
    def __init__(self, token: str = "test.discord.token") -> None:
        super().__init__()
        self.token = token
        self.typing: list[str] = []
        self.edits: list[dict[str, Any]] = []
        self.identifies = 0
        self.resumes = 0
        self._socket: web.WebSocketResponse | None = None
        self._seq = itertools.count(1)
        self._ids = itertools.count(950000000000000001)
        self._ready = asyncio.Condition()
        self.files: dict[str, tuple[bytes, str]] = {}
        self.downloads: list[str] = []

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/ws", self._ws)
        app.router.add_get("/api/v10/users/@me", self._me)
        app.router.add_get("/api/v10/oauth2/applications/@me", self._application)
        app.router.add_get("/api/v10/gateway/bot", self._gateway_bot)
        app.router.add_post("/api/v10/channels/{channel}/messages", self._create)
        app.router.add_patch("/api/v10/channels/{channel}/messages/{message}", self._edit)
        app.router.add_post("/api/v10/channels/{channel}/typing", self._typing)
        app.router.add_get("/attachments/{channel}/{id}/{name}", self._attachment)

    # -- REST ------------------------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") == f"Bot {self.token}":
            return None
        return json_response({"message": "401: Unauthorized", "code": 0}, status=401)

    def _user(self) -> dict[str, Any]:
        return {
            "id": BOT_ID,
            "username": "hermes",
            "discriminator": "0",
            "bot": True,
            "global_name": "Hermes",
            "avatar": None,
        }

    async def _me(self, request: web.Request) -> web.Response:
        return self._refused(request) or json_response(self._user())

    async def _application(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        owner = {"id": "1", "username": "owner", "discriminator": "0", "avatar": None}
        return json_response(
            {
                "id": BOT_ID,
                "name": "Hermes",
                "description": "",
                "icon": None,
                "bot_public": False,
                "bot_require_code_grant": False,
                "owner": owner,
                "verify_key": "0" * 64,
                "flags": 0,
                "team": None,
            }
        )

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        return json_response(
            {
                "url": f"ws://127.0.0.1:{self.port}/ws",
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 0,
                    "max_concurrency": 1,
                },
            }
        )

    async def _create(self, request: web.Request) -> web.Response:
        refused = self._refused(request) or self.failure("messages")
        if refused is not None:
            return refused
        body = await request.json()
        content = str(body.get("content") or "")
        if len(content) > 2000:
            error = {
                "message": "Invalid Form Body",
                "code": 50035,
                "errors": {
                    "content": {
                        "_errors": [
                            {
                                "code": "BASE_TYPE_MAX_LENGTH",
                                "message": "Must be 2000 or fewer in length.",
                            }
                        ]
                    }
                },
            }
            return json_response(error, status=400)
        channel = request.match_info["channel"]
        message = self._message(channel, content, self._user(), body.get("message_reference"))
        await self.record({"channel": channel, "id": message["id"], **body})
        return json_response(message)

    async def _edit(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        body = await request.json()
        self.edits.append({"message": request.match_info["message"], **body})
        self.revise({"id": request.match_info["message"]}, "content", str(body.get("content", "")))
        channel = request.match_info["channel"]
        return json_response(self._message(channel, body.get("content", ""), self._user()))

    async def _typing(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        self.typing.append(request.match_info["channel"])
        return web.Response(status=204)

    async def _attachment(self, request: web.Request) -> web.Response:
        """The CDN: an attachment's bytes by its URL (no token, as on cdn.discordapp.com)."""
        found = self.files.get(request.match_info["id"])
        if found is None:
            return web.Response(status=404)
        self.downloads.append(request.match_info["id"])
        return web.Response(body=found[0], content_type=found[1])

    def attachment(
        self, channel: str, data: bytes, filename: str, content_type: str, flags: int = 0
    ) -> dict[str, Any]:
        """An attachment object as a MESSAGE_CREATE carries it (flags 1<<13: a voice message)."""
        attachment_id = str(next(self._ids))
        self.files[attachment_id] = (data, content_type)
        url = f"{self.base_url}/attachments/{channel}/{attachment_id}/{filename}"
        return {
            "id": attachment_id,
            "filename": filename,
            "size": len(data),
            "url": url,
            "proxy_url": url,
            "content_type": content_type,
            "flags": flags,
        }

    def _message(
        self,
        channel: str,
        content: str,
        author: dict[str, Any],
        ref: Any = None,
        guild: str | None = None,
        mentions: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "id": str(next(self._ids)),
            "channel_id": channel,
            "author": author,
            "content": content,
            "timestamp": "2026-01-01T00:00:00.000000+00:00",
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": mentions or [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
        }
        if ref:
            message["message_reference"] = ref
        if guild:
            message["guild_id"] = guild
        return message

    # -- gateway ---------------------------------------------------------------------------

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._socket = ws
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            frame = msg.json()
            if frame["op"] == 1:
                await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
            elif frame["op"] == 2:
                await self._identified(ws, frame["d"])
            elif frame["op"] == 6:
                self.resumes += 1
                await self._dispatch(ws, "RESUMED", {})
                await self._announce()
        return ws

    async def _identified(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> None:
        if data.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        self.identifies += 1
        await self._dispatch(
            ws,
            "READY",
            {
                "v": 10,
                "user": self._user(),
                "guilds": [{"id": GUILD, "unavailable": True}],
                "session_id": f"session{self.identifies}",
                "resume_gateway_url": f"ws://127.0.0.1:{self.port}/ws",
                "application": {"id": BOT_ID, "flags": 0},
            },
        )
        await self._dispatch(ws, "GUILD_CREATE", self._guild())
        await self._announce()

    async def _announce(self) -> None:
        async with self._ready:
            self._ready.notify_all()

    def _guild(self) -> dict[str, Any]:
        return {
            "id": GUILD,
            "name": "Test Server",
            "owner_id": "1",
            "unavailable": False,
            "member_count": 3,
            "large": False,
            "roles": [],
            "emojis": [],
            "features": [],
            "members": [],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "stickers": [],
            "soundboard_sounds": [],
            "channels": [
                {
                    "id": CHANNEL,
                    "type": 0,
                    "name": "general",
                    "position": 0,
                    "guild_id": GUILD,
                    "permission_overwrites": [],
                }
            ],
            "threads": [
                {
                    "id": THREAD,
                    "type": 11,
                    "name": "a thread",
                    "parent_id": CHANNEL,
                    "guild_id": GUILD,
                    "owner_id": "1",
                    "message_count": 0,
                    "member_count": 1,
                    "rate_limit_per_user": 0,
                    "flags": 0,
                    "thread_metadata": {
                        "archived": False,
                        "auto_archive_duration": 1440,
                        "archive_timestamp": "2026-01-01T00:00:00+00:00",
                        "locked": False,
                    },
                }
            ],
        }

    async def _dispatch(self, ws: web.WebSocketResponse, event: str, data: Any) -> None:
        await ws.send_json({"op": 0, "t": event, "s": next(self._seq), "d": data})

    async def wait_ready(self, identifies: int = 1, within: float = 10.0) -> None:
        async with self._ready:
            await asyncio.wait_for(
                self._ready.wait_for(
                    lambda: (
                        self.identifies + self.resumes >= identifies
                        and self._socket is not None
                        and not self._socket.closed
                    )
                ),
                within,
            )

    async def user_says(
        self,
        user: str,
        text: str,
        *,
        channel: str | None = None,
        guild: bool = False,
        mention: bool = False,
        files: list[tuple[bytes, str, str]] | None = None,
        voice: bytes | None = None,
    ) -> dict[str, Any]:
        """A MESSAGE_CREATE from `user`: a DM (channel `dm<user>`) unless `channel` is given."""
        author = {
            "id": user,
            "username": f"user{user[-3:]}",
            "discriminator": "0",
            "global_name": None,
            "avatar": None,
        }
        if mention:
            text = f"<@{BOT_ID}> {text}"
        mentions = [self._user()] if mention else []
        target = channel or f"8{user[-17:]}"
        message = self._message(
            target, text, author, guild=GUILD if guild else None, mentions=mentions
        )
        message["attachments"] = [self.attachment(target, *f) for f in files or []]
        if voice is not None:
            note = self.attachment(target, voice, "voice-message.ogg", "audio/ogg", 1 << 13)
            message["attachments"].append({**note, "duration_secs": 1.0, "waveform": "AAAA"})
        assert self._socket is not None
        await self._dispatch(self._socket, "MESSAGE_CREATE", message)
        return message

    async def drop(self) -> None:
        if self._socket is not None:
            await self._socket.close(code=4000, message=b"Unknown error")

    def texts(self) -> list[str]:
        return [str(m["content"]) for m in self.sent]
