"""A loopback stand-in for a Mattermost server, written from the API v4 reference: bearer-token
auth, `GET /api/v4/users/me`, `POST /api/v4/posts`, `PUT /api/v4/posts/{id}/patch`,
`POST /api/v4/users/me/typing`, `GET /api/v4/files/{id}` and `/files/{id}/info` (files a post
carries in `file_ids`, added with `add_file`), and `/api/v4/websocket`, which sends `hello` and then a
`posted` event (the post as a JSON string, `channel_type`, `mentions` as a JSON string) for each
message. Scripted failures answer 429 with `X-RateLimit-Reset`. Tests make people write with
`user_says` and read the chat as it shows now (edits applied) from `posts`."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

from aiohttp import WSMsgType, web

from tests.standins.standin import LoopbackServer

TOKEN = "mm-bot-token"
BOT_ID = "botuserid000000000000000000"
BOT_NAME = "hermes"


class Mattermost(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.posts: list[dict[str, Any]] = []
        self.edits: list[dict[str, Any]] = []
        self.typing: list[dict[str, Any]] = []
        self.route_failures: list[tuple[str, int, float]] = []
        self._ids = (f"post{n:022d}" for n in itertools.count(1))
        self._sockets: set[web.WebSocketResponse] = set()
        self._seq = itertools.count(1)
        self.files: dict[str, tuple[bytes, str, str]] = {}
        self._file_ids = (f"file{n:022d}" for n in itertools.count(1))

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v4/users/me", self._me)
        app.router.add_post("/api/v4/posts", self._create)
        app.router.add_put("/api/v4/posts/{id}/patch", self._patch)
        app.router.add_post("/api/v4/users/me/typing", self._typing)
        app.router.add_get("/api/v4/websocket", self._websocket)
        app.router.add_get("/api/v4/files/{id}/info", self._file_info)
        app.router.add_get("/api/v4/files/{id}", self._file)

    async def stop(self) -> None:
        await self.drop_sockets()
        await super().stop()

    @property
    def url(self) -> str:
        return self.base_url

    # -- what tests do ---------------------------------------------------------------------

    async def user_says(
        self,
        user: str,
        text: str,
        *,
        channel: str = "dm-channel",
        direct: bool = True,
        root_id: str = "",
        mention: bool = False,
        file_ids: list[str] | None = None,
    ) -> str:
        post_id = next(self._ids)
        post = {
            "id": post_id,
            "create_at": int(time.time() * 1000),
            "user_id": user,
            "channel_id": channel,
            "root_id": root_id,
            "message": f"@{BOT_NAME} {text}" if mention else text,
            "type": "",
            "props": {},
            "file_ids": file_ids or [],
        }
        data = {
            "channel_type": "D" if direct else "O",
            "post": json.dumps(post),
            "sender_name": f"@{user}",
            "mentions": json.dumps([BOT_ID]) if mention else "",
        }
        await self._broadcast(
            {"event": "posted", "data": data, "broadcast": {"channel_id": channel}}
        )
        return post_id

    async def wait_connected(self, within: float = 10.0) -> None:
        """Until a websocket listens (a post sent before would reach no one)."""
        deadline = time.monotonic() + within
        while not self._sockets:
            assert time.monotonic() < deadline, "mattermost stand-in: no websocket connected"
            await asyncio.sleep(0.01)

    def add_file(self, data: bytes, name: str, mime: str) -> str:
        """An uploaded file (as `POST /files` would keep it); its id for `user_says(file_ids=)`."""
        file_id = next(self._file_ids)
        self.files[file_id] = (data, name, mime)
        return file_id

    def fail_route(self, route: str, status: int, reset: float = 1.0) -> None:
        """The next request to `route` ("posts", "patch") answers `status` (429: rate limited)."""
        self.route_failures.append((route, status, reset))

    async def wait_for_posts(self, n: int, within: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + within
        while len(self.posts) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"mattermost stand-in: expected {n} posts, got {self.posts}")
            await asyncio.sleep(0.01)
        return self.posts

    async def drop_sockets(self) -> None:
        for ws in list(self._sockets):
            await ws.close()

    # -- the server ------------------------------------------------------------------------

    def _refused(self, request: web.Request, route: str) -> web.Response | None:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response(
                {
                    "id": "api.context.session_expired.app_error",
                    "message": "Invalid or expired session",
                },
                status=401,
            )
        for i, (name, status, reset) in enumerate(self.route_failures):
            if name == route:
                del self.route_failures[i]
                headers = {"X-RateLimit-Reset": str(reset)} if status == 429 else {}
                return web.json_response({"message": "failure"}, status=status, headers=headers)
        return None

    async def _file_info(self, request: web.Request) -> web.Response:
        refused = self._refused(request, "files")
        found = self.files.get(request.match_info["id"])
        if refused or found is None:
            return refused or web.json_response({"message": "not found"}, status=404)
        data, name, mime = found
        info = {"id": request.match_info["id"], "name": name, "mime_type": mime, "size": len(data)}
        return web.json_response(info)

    async def _file(self, request: web.Request) -> web.Response:
        refused = self._refused(request, "files")
        found = self.files.get(request.match_info["id"])
        if refused or found is None:
            return refused or web.json_response({"message": "not found"}, status=404)
        return web.Response(body=found[0], content_type=found[2])

    async def _me(self, request: web.Request) -> web.Response:
        refused = self._refused(request, "me")
        return refused or web.json_response({"id": BOT_ID, "username": BOT_NAME, "is_bot": True})

    async def _create(self, request: web.Request) -> web.Response:
        refused = self._refused(request, "posts")
        if refused:
            return refused
        body = await request.json()
        message = str(body.get("message") or "")
        if not body.get("channel_id") or len(message) > 16383:
            return web.json_response({"message": "invalid post"}, status=400)
        post = {
            "id": next(self._ids),
            "user_id": BOT_ID,
            "channel_id": body["channel_id"],
            "root_id": body.get("root_id") or "",
            "message": message,
            "sent_at": time.perf_counter(),
        }
        self.posts.append(post)
        await self._broadcast(
            {"event": "posted", "data": {"channel_type": "D", "post": json.dumps(post)}}
        )
        return web.json_response(post, status=201)

    async def _patch(self, request: web.Request) -> web.Response:
        refused = self._refused(request, "patch")
        if refused:
            return refused
        body = await request.json()
        post = next((p for p in self.posts if p["id"] == request.match_info["id"]), None)
        if post is None:
            return web.json_response({"message": "post not found"}, status=404)
        post.setdefault("first_message", post["message"])
        post["message"] = str(body.get("message") or "")
        self.edits.append(
            {"id": post["id"], "message": post["message"], "edited_at": time.perf_counter()}
        )
        return web.json_response(post)

    async def _typing(self, request: web.Request) -> web.Response:
        refused = self._refused(request, "typing")
        if refused:
            return refused
        self.typing.append(await request.json())
        return web.json_response({"status": "OK"})

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.Response(status=401)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.add(ws)
        await ws.send_str(json.dumps({"event": "hello", "data": {}, "seq": next(self._seq)}))
        try:
            async for frame in ws:
                if frame.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
                    break
        finally:
            self._sockets.discard(ws)
        return ws

    async def _broadcast(self, event: dict[str, Any]) -> None:
        event["seq"] = next(self._seq)
        for ws in list(self._sockets):
            await ws.send_str(json.dumps(event))
