"""Mattermost through its REST API v4 and websocket: the bot (a bot account's or a personal
access token, MATTERMOST_TOKEN) keeps `/api/v4/websocket` open for `posted` events and answers
with `POST /api/v4/posts`, editing its answer in place (`PUT /api/v4/posts/{id}/patch`) while it
streams. MATTERMOST_URL is the server; MATTERMOST_ALLOWED_USERS lists user ids.

What a Mattermost user expects:
* direct messages are answered; in channels the bot answers when @mentioned, in a thread under
  the message (a thread is its own session, as is a direct chat);
* "typing…" while it works, Markdown as written (Mattermost renders it), answers split at the
  server's 16,383 characters, and 429s waited out as the `X-RateLimit-Reset` header says.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import httpx
from pydantic import SecretStr

from hermes import tls
from hermes.config.settings import Settings
from hermes.gateway.base import (
    AdapterError,
    Attachment,
    Inbound,
    InboundHandler,
    PlatformAdapter,
    PlatformConfig,
    read_platform_config,
)
from hermes.gateway.platforms import PlatformSpec, needs
from hermes.gateway.platforms.downloads import MAX_FILE_BYTES, fetch, safe_name
from hermes.gateway.platforms.telegram_format import split_text

log = logging.getLogger(__name__)

LIMIT = 16383
SEND_ATTEMPTS = 4
MAX_WAIT = 30.0
HEARTBEAT = 30.0
_FILE_ID = re.compile(r"^[a-z0-9]{26}$")
"""Mattermost ids: 26 lowercase letters and digits."""


class MattermostConfig(PlatformConfig):
    """`gateway.mattermost.*` (MATTERMOST_URL → url, MATTERMOST_TOKEN, MATTERMOST_ALLOWED_USERS)."""

    url: str | None = None
    token: SecretStr | None = None


def read_config(settings: Settings) -> MattermostConfig:
    return read_platform_config(settings, "mattermost", MattermostConfig)


class MattermostAdapter(PlatformAdapter):
    name = "mattermost"
    live_edits = True
    message_limit = LIMIT

    def __init__(self, cfg: MattermostConfig, files_dir: Path) -> None:
        assert cfg.url and cfg.token
        self.base = cfg.url.rstrip("/")
        self.files_dir = files_dir
        self._token = cfg.token.get_secret_value()
        self.user_id = ""
        self.username = ""
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._stopping = False

    async def connect(self) -> None:
        self._stopping = False
        me = await self._api("GET", "/users/me")
        self.user_id, self.username = str(me["id"]), str(me.get("username") or "")

    async def listen(self, handler: InboundHandler) -> None:
        url = self.base.replace("http", "ws", 1) + "/api/v4/websocket"
        try:
            async with self._session().ws_connect(
                url, headers=self._headers(), heartbeat=HEARTBEAT
            ) as ws:
                self._ws = ws
                async for frame in ws:
                    if frame.type != aiohttp.WSMsgType.TEXT:
                        break
                    found = self._inbound(frame.data)
                    if found is None:
                        continue
                    inbound, file_ids = found
                    if file_ids:
                        inbound = await self._with_files(inbound, file_ids)
                    await handler(inbound)
        except aiohttp.ClientError as exc:
            if self._stopping:
                return
            raise AdapterError(f"the Mattermost websocket broke: {exc}", retryable=True) from None
        finally:
            self._ws = None
        if not self._stopping:
            raise AdapterError("Mattermost closed the websocket", retryable=True)

    async def disconnect(self) -> None:
        self._stopping = True
        if self._ws is not None:
            await self._ws.close()
        http, self._http = self._http, None
        if http is not None:
            await http.close()

    # -- inbound ---------------------------------------------------------------------------

    def _inbound(self, raw: str) -> tuple[Inbound, list[str]] | None:
        """A `posted` event as the message and the ids of the files attached to it."""
        try:
            event = json.loads(raw)
            if event.get("event") != "posted":
                return None
            data = event["data"]
            post = json.loads(data["post"])
        except (ValueError, KeyError, TypeError):
            return None
        sender = str(post.get("user_id") or "")
        text = str(post.get("message") or "")
        raw_ids = post.get("file_ids")
        file_ids = (
            [str(f) for f in raw_ids if isinstance(f, str)] if isinstance(raw_ids, list) else []
        )
        if not sender or sender == self.user_id or post.get("type"):
            return None  # our own posts, system messages (joins, header changes)
        if not text.strip() and not file_ids:
            return None
        direct = data.get("channel_type") == "D"
        if not direct and not self._mentioned(data, text):
            return None
        post_id = str(post["id"])
        # in channels the answer goes in a thread under the message (its own session)
        thread = str(post.get("root_id") or "") or (None if direct else post_id)
        return Inbound(
            platform=self.name,
            chat=str(post["channel_id"]),
            sender=sender,
            text=self._without_mention(text),
            thread=thread,
            sender_name=str(data.get("sender_name") or "").lstrip("@") or None,
            message_id=post_id,
        ), file_ids[:10]

    async def _with_files(self, inbound: Inbound, file_ids: list[str]) -> Inbound:
        """Attached files (photos, voice recordings, documents) saved under
        gateway/files/mattermost: their info, then their bytes, from the server's files API."""
        saved: list[Attachment] = []
        async with httpx.AsyncClient(
            verify=tls.httpx_context(),
            base_url=f"{self.base}/api/v4",
            headers=self._headers(),
            timeout=60,
        ) as http:
            for file_id in file_ids:
                if not _FILE_ID.match(file_id):
                    continue
                try:
                    info = (await http.get(f"/files/{file_id}/info")).raise_for_status().json()
                    if int(info.get("size") or 0) > MAX_FILE_BYTES:
                        raise AdapterError(f"{info.get('name')!r} is over {MAX_FILE_BYTES} bytes")
                    name = str(info.get("name") or file_id)
                    folder = self.files_dir / safe_name(inbound.chat)
                    path = folder / f"{inbound.message_id}_{safe_name(name)}"
                    saved.append(
                        await fetch(
                            http, f"/files/{file_id}", path, name=name, mime=info.get("mime_type")
                        )
                    )
                except (httpx.HTTPError, ValueError, AdapterError, OSError) as exc:
                    log.warning("mattermost: could not save an attached file: %s", exc)
        return replace(inbound, attachments=(*inbound.attachments, *saved))

    def _mentioned(self, data: dict[str, Any], text: str) -> bool:
        try:
            mentions = json.loads(data.get("mentions") or "[]")
        except ValueError:
            mentions = []
        return self.user_id in mentions or bool(self.username and f"@{self.username}" in text)

    def _without_mention(self, text: str) -> str:
        if self.username:
            text = text.replace(f"@{self.username}", "")
        return " ".join(text.split()) if "\n" not in text else text.strip()

    # -- outbound --------------------------------------------------------------------------

    async def send(
        self,
        chat: str,
        text: str,
        *,
        thread: str | None = None,
        reply_to: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str | None:
        last: str | None = None
        for piece in split_text(text, LIMIT):
            body = {"channel_id": chat, "message": piece, "root_id": thread or ""}
            post = await self._api("POST", "/posts", body)
            last = str(post["id"])
        return last

    async def edit(self, chat: str, message_id: str, text: str) -> None:
        piece = split_text(text, LIMIT)[0] if text.strip() else "…"
        await self._api("PUT", f"/posts/{message_id}/patch", {"message": piece})

    async def typing(self, chat: str, thread: str | None = None) -> None:
        await self._api("POST", "/users/me/typing", {"channel_id": chat, "parent_id": thread or ""})

    # -- the REST API ----------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        return self._http

    async def _api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = f"{self.base}/api/v4{path}"
        for attempt in range(SEND_ATTEMPTS):
            try:
                async with self._session().request(
                    method, url, json=body, headers=self._headers()
                ) as r:
                    if r.status == 429 and attempt < SEND_ATTEMPTS - 1:
                        await asyncio.sleep(_reset_seconds(r.headers))
                        continue
                    payload = await r.json(content_type=None) if r.content_length != 0 else {}
                    if r.status in (401, 403):
                        raise AdapterError(
                            f"Mattermost refused the token ({r.status}): {_why(payload)}",
                            retryable=False,
                        )
                    if r.status >= 400:
                        raise AdapterError(
                            f"Mattermost {method} {path} failed ({r.status}): {_why(payload)}",
                            retryable=r.status >= 500 or r.status == 429,
                        )
                    return payload
            except aiohttp.ClientError as exc:
                if attempt == SEND_ATTEMPTS - 1:
                    raise AdapterError(
                        f"Mattermost cannot be reached: {exc}", retryable=True
                    ) from None
                await asyncio.sleep(0.5 * 2**attempt)
        raise AdapterError("Mattermost kept rate-limiting", retryable=True)


def _reset_seconds(headers: Any) -> float:
    """`X-RateLimit-Reset` is the number of seconds until the limit resets."""
    try:
        return min(max(float(headers.get("X-RateLimit-Reset", "1")), 0.0), MAX_WAIT)
    except ValueError:
        return 1.0


def _why(payload: Any) -> str:
    return str(payload.get("message") or payload) if isinstance(payload, dict) else str(payload)


def _create(settings: Settings) -> PlatformAdapter:
    files = settings.home / "gateway" / "files" / "mattermost"
    return MattermostAdapter(read_config(settings), files)


PLATFORM = PlatformSpec(
    name="mattermost", configured=needs("mattermost", "url", "token"), create=_create
)
