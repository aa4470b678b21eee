"""Matrix through matrix-nio: the bot signs in to MATRIX_HOMESERVER as MATRIX_USER_ID (with
MATRIX_ACCESS_TOKEN, or MATRIX_PASSWORD), long-polls `/sync`, and sends `m.room.message`
events. `gateway.matrix.api_base`, when set, replaces the homeserver URL.

What a Matrix user expects:
* rooms are chats: the bot joins a room when an allowed user (MATRIX_ALLOWED_USERS, or an
  owner in `gateway.owner`) invites it, and rejects invitations from anyone else; in rooms it
  reads every message (it is a participant), and answers as a reply (`m.in_reply_to`);
* threads (`m.thread`) are their own sessions, and answers to a threaded message stay in the
  thread; history from before the bot started is not answered;
* the body is plain text and `formatted_body` carries HTML made from the model's Markdown,
  so clients without HTML support show the plain words; answers are split at 16,000
  characters (Matrix events are limited to 64 KiB);
* typing notifications while working; rate limits (M_LIMIT_EXCEEDED) are waited out by nio;
* with a password, the session (device) it creates is kept in
  `$HERMES_HOME/gateway/matrix_session.json` (0600; a store document of that name on
  PostgreSQL, so every replica reuses it) and reused, so restarts do not pile up devices on
  the account.

End-to-end encryption is NOT supported: Hermes has no Olm/Megolm keys, so it cannot read
encrypted rooms. When an encrypted event arrives it logs, once per room, "room … is
end-to-end encrypted; Hermes does not support encryption and ignores it" and answers nothing
there. Invite the bot to an unencrypted room instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import SecretStr

from hermes import tls
from hermes.config.settings import Settings
from hermes.fileio import atomic_write
from hermes.gateway.access import PairingStore
from hermes.gateway.base import (
    AdapterError,
    Inbound,
    InboundHandler,
    PlatformAdapter,
    PlatformConfig,
    read_platform_config,
    require_library,
)
from hermes.gateway.platforms import PlatformSpec
from hermes.gateway.platforms.downloads import MAX_FILE_BYTES, fetch, safe_name
from hermes.gateway.platforms.telegram_format import split_text, to_html
from hermes.store.base import DEFAULT_SCOPE

if TYPE_CHECKING:
    from hermes.store.base import DocumentStore

log = logging.getLogger(__name__)

LIMIT = 16000
SESSION_DOCUMENT = "gateway/matrix_session.json"
"""Where the session lives in a shared database (the same JSON as the file)."""
SYNC_TIMEOUT_MS = 30000
TYPING_MS = 5000
_MXC = re.compile(r"^mxc://(?P<server>[A-Za-z0-9.:\[\]-]+)/(?P<media>[A-Za-z0-9_-]+)$")
_MEDIA_KINDS = {"m.image": "photo", "m.audio": "audio", "m.video": "video", "m.file": "document"}
_PRE = re.compile(r"(<pre>.*?</pre>)", re.S)


def _import_nio() -> Any:
    return require_library("nio", platform="Matrix", library="matrix-nio", extra="matrix")


class MatrixConfig(PlatformConfig):
    """`gateway.matrix.*` (MATRIX_HOMESERVER, MATRIX_USER_ID, MATRIX_PASSWORD or
    MATRIX_ACCESS_TOKEN, MATRIX_ALLOWED_USERS)."""

    homeserver: str | None = None
    api_base: str | None = None
    user_id: str | None = None
    password: SecretStr | None = None
    access_token: SecretStr | None = None
    device_name: str = "Hermes"


def read_config(settings: Settings) -> MatrixConfig:
    return read_platform_config(settings, "matrix", MatrixConfig)


def to_matrix_html(markdown: str) -> str:
    """The Markdown → HTML of the Telegram adapter (b, i, s, code, pre, a: all allowed in
    Matrix's `org.matrix.custom.html`), with line breaks as `<br>` outside `<pre>`."""
    parts = _PRE.split(to_html(markdown))
    return "".join(p if p.startswith("<pre>") else p.replace("\n", "<br>") for p in parts)


def room_and_thread(chat: str, thread: str | None) -> tuple[str, str | None]:
    """Room ids contain a colon (`!abc:example.org`), so a delivery target such as
    `matrix:!abc:example.org` arrives split as chat `!abc`, thread `example.org`: join them
    again; a real thread is an event id (`$…`)."""
    if thread and not thread.startswith("$"):
        joined = f"{chat}:{thread}"
        room, sep, event = joined.partition(":$")
        return room, f"${event}" if sep else None
    return chat, thread


class MatrixAdapter(PlatformAdapter):
    name = "matrix"
    live_edits = True
    message_limit = LIMIT

    def __init__(
        self,
        cfg: MatrixConfig,
        inviters: frozenset[str],
        pairing: PairingStore,
        session_file: Path | None = None,
        *,
        files_dir: Path,
    ) -> None:
        self.cfg = cfg
        self.files_dir = files_dir
        self.session_file = session_file
        self.documents: DocumentStore | None = None
        self.homeserver = (cfg.api_base or cfg.homeserver or "").rstrip("/")
        self.inviters = inviters
        self.pairing = pairing
        self.client: Any = None
        self._since: str | None = None
        self._stopping = asyncio.Event()
        self._encrypted_noted: set[str] = set()

    # -- lifecycle -------------------------------------------------------------------------

    def may_invite(self, user: str) -> bool:
        """Allowed users, owners, and people paired since the gateway started (blocking)."""
        return user in self.inviters or f"matrix:{user}" in self.pairing.approved()

    def share_state(self, documents: DocumentStore | None) -> None:
        """Pairings and the signed-in session live in the shared database when there is one
        (several replicas): the replica that takes the account over reuses the device."""
        if documents is not None:
            self.pairing = PairingStore(self.pairing.home, documents=documents)
            self.documents = documents

    async def connect(self) -> None:
        nio = _import_nio()
        assert self.cfg.user_id is not None
        self._stopping.clear()
        config = nio.AsyncClientConfig(encryption_enabled=False, max_limit_exceeded=5)
        client = nio.AsyncClient(self.homeserver, self.cfg.user_id, config=config)
        try:
            await self._sign_in(nio, client)
            first = await client.sync(timeout=0, full_state=True)  # skip older history
            if isinstance(first, nio.SyncError):
                raise AdapterError(f"Matrix sync failed: {first.message}", retryable=True)
        except BaseException:
            await client.close()
            raise
        self.client, self._since = client, first.next_batch
        await self._handle_invites(first)

    async def _sign_in(self, nio: Any, client: Any) -> None:
        try:
            if self.cfg.access_token is not None:
                client.access_token = self.cfg.access_token.get_secret_value()
                who = await client.whoami()
                if isinstance(who, nio.WhoamiError):
                    raise AdapterError(
                        f"the homeserver refused MATRIX_ACCESS_TOKEN: {who.message}",
                        retryable=who.status_code != "M_UNKNOWN_TOKEN",
                    )
                return
            if self.cfg.password is None:
                raise AdapterError(
                    "Matrix needs MATRIX_ACCESS_TOKEN or MATRIX_PASSWORD", retryable=False
                )
            if await self._resume(nio, client):
                return
            login = await client.login(
                self.cfg.password.get_secret_value(), device_name=self.cfg.device_name
            )
        except OSError as exc:
            raise AdapterError(
                f"the Matrix homeserver could not be reached: {exc}", retryable=True
            ) from None
        if isinstance(login, nio.LoginError):
            raise AdapterError(
                f"the homeserver refused MATRIX_USER_ID / MATRIX_PASSWORD: {login.message}",
                retryable=login.status_code not in ("M_FORBIDDEN", "M_USER_DEACTIVATED"),
            )
        await asyncio.to_thread(self._save, client)

    async def _resume(self, nio: Any, client: Any) -> bool:
        """Reuse the device a password login made last time (`gateway/matrix_session.json`,
        0600) instead of adding a new device to the account at every start."""
        saved = await asyncio.to_thread(self._load)
        if saved is None:
            return False
        client.access_token, client.device_id = saved["access_token"], saved["device_id"]
        who = await client.whoami()
        if isinstance(who, nio.WhoamiError):
            log.info("matrix: the saved session is no longer valid (%s); signing in", who.message)
            client.access_token, client.device_id = "", None
            return False
        return True

    def _load(self) -> dict[str, str] | None:
        try:
            if self.documents is not None:
                text = self.documents.read_document(DEFAULT_SCOPE, SESSION_DOCUMENT)
            elif self.session_file is not None:
                text = self.session_file.read_text(encoding="utf-8")
            else:
                return None
            data = json.loads(text or "null")
        except (OSError, ValueError):
            return None
        fits = (
            isinstance(data, dict)
            and data.get("homeserver") == self.homeserver
            and data.get("user_id") == self.cfg.user_id
            and isinstance(data.get("access_token"), str)
        )
        return data if fits else None

    def _save(self, client: Any) -> None:
        data = {
            "homeserver": self.homeserver,
            "user_id": self.cfg.user_id,
            "device_id": client.device_id,
            "access_token": client.access_token,
        }
        if self.documents is not None:
            with self.documents.edit_document(DEFAULT_SCOPE, SESSION_DOCUMENT) as edit:
                assert edit is not None
                edit.new_text = json.dumps(data)
        elif self.session_file is not None:
            atomic_write(self.session_file, json.dumps(data), mode=0o600)

    async def disconnect(self) -> None:
        self._stopping.set()
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    async def listen(self, handler: InboundHandler) -> None:
        nio = _import_nio()
        while not self._stopping.is_set() and self.client is not None:
            try:
                resp = await self.client.sync(timeout=SYNC_TIMEOUT_MS, since=self._since)
            except (OSError, TimeoutError, nio.LocalProtocolError) as exc:
                raise AdapterError(f"Matrix sync failed: {exc}", retryable=True) from None
            if isinstance(resp, nio.SyncError):
                raise AdapterError(f"Matrix sync failed: {resp.message}", retryable=True)
            self._since = resp.next_batch
            await self._handle_invites(resp)
            for room_id, room in resp.rooms.join.items():
                for event in room.timeline.events:
                    inbound = self._normalize(nio, room_id, event)
                    if inbound is not None and isinstance(event, nio.RoomMessageMedia):
                        inbound = await self._with_media(inbound, event)
                    if inbound is not None:
                        await handler(inbound)

    # -- inbound ---------------------------------------------------------------------------

    async def _handle_invites(self, resp: Any) -> None:
        for room_id, room in resp.rooms.invite.items():
            inviter = next(
                (
                    getattr(e, "sender", None)
                    for e in room.invite_state
                    if getattr(e, "membership", None) == "invite"
                    and getattr(e, "state_key", None) == self.cfg.user_id
                ),
                None,
            )
            if inviter and await asyncio.to_thread(self.may_invite, inviter):
                log.info("matrix: joining %s (invited by %s)", room_id, inviter)
                await self.client.join(room_id)
            else:
                log.info(
                    "matrix: rejected an invitation to %s from %s (not allowed)", room_id, inviter
                )
                await self.client.room_leave(room_id)

    def _normalize(self, nio: Any, room_id: str, event: Any) -> Inbound | None:
        if getattr(event, "sender", None) == self.cfg.user_id:
            return None
        if isinstance(event, nio.MegolmEvent | nio.RoomEncryptionEvent):
            if room_id not in self._encrypted_noted:
                self._encrypted_noted.add(room_id)
                log.warning(
                    "matrix: room %s is end-to-end encrypted; Hermes does not support "
                    "encryption and ignores it (use an unencrypted room)",
                    room_id,
                )
            return None
        media = isinstance(event, nio.RoomMessageMedia)
        if not (media or isinstance(event, nio.RoomMessageText | nio.RoomMessageNotice)):
            return None
        content = event.source.get("content") or {}
        relates = content.get("m.relates_to") or {}
        thread = relates.get("event_id") if relates.get("rel_type") == "m.thread" else None
        reply_to = (relates.get("m.in_reply_to") or {}).get("event_id")
        text = _strip_reply_fallback(event.body)
        if media:  # `body` is a caption only when a `filename` is given beside it
            filename = content.get("filename")
            text = text if filename and filename != event.body else ""
        return Inbound(
            platform=self.name,
            chat=room_id,
            thread=thread,
            sender=event.sender,
            text=text,
            message_id=event.event_id,
            reply_to=reply_to,
        )

    async def _with_media(self, inbound: Inbound, event: Any) -> Inbound | None:
        """An m.image / m.audio / m.file saved under gateway/files/matrix, downloaded from the
        bot's own homeserver (authenticated media, else the older unauthenticated path)."""
        content = event.source.get("content") or {}
        info = content.get("info") or {}
        name = str(content.get("filename") or event.body or "file")
        match = _MXC.match(str(event.url or ""))
        size = info.get("size")
        if match is None or (isinstance(size, int) and size > MAX_FILE_BYTES):
            log.warning("matrix: a %s was not downloaded", content.get("msgtype"))
            return inbound if inbound.text else None
        server, media_id = match["server"], match["media"]
        path = (
            self.files_dir
            / safe_name(inbound.chat)
            / f"{safe_name(inbound.message_id or '')}_{safe_name(name)}"
        )
        mime = info.get("mimetype") if isinstance(info.get("mimetype"), str) else None
        token = getattr(self.client, "access_token", None) or ""
        async with httpx.AsyncClient(
            verify=tls.httpx_context(),
            base_url=self.homeserver,
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        ) as http:
            for route in (
                f"/_matrix/client/v1/media/download/{server}/{media_id}",
                f"/_matrix/media/v3/download/{server}/{media_id}",
            ):
                try:
                    saved = await fetch(http, route, path, name=name, mime=mime)
                except (AdapterError, OSError) as exc:
                    log.info("matrix: %s: %s", route.split("/download")[0], exc)
                    continue
                kind = _MEDIA_KINDS.get(str(content.get("msgtype")), saved.kind)
                return replace(inbound, attachments=(replace(saved, kind=kind),))
        log.warning("matrix: could not download %s", event.url)
        return inbound if inbound.text else None

    # -- outbound --------------------------------------------------------------------------

    async def _client(self) -> Any:
        """The connected client; for a one-off delivery (cron without `hermes serve`) a
        signed-in client without a sync."""
        if self.client is None:
            nio = _import_nio()
            assert self.cfg.user_id is not None
            config = nio.AsyncClientConfig(encryption_enabled=False, max_limit_exceeded=5)
            client = nio.AsyncClient(self.homeserver, self.cfg.user_id, config=config)
            try:
                await self._sign_in(nio, client)
            except BaseException:
                await client.close()
                raise
            self.client = client
        return self.client

    async def send(
        self,
        chat: str,
        text: str,
        *,
        thread: str | None = None,
        reply_to: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str | None:
        room, thread = room_and_thread(chat, thread)
        last: str | None = None
        for i, piece in enumerate(split_text(text, LIMIT)):
            content: dict[str, Any] = {
                "msgtype": "m.text",
                "body": piece,
                "format": "org.matrix.custom.html",
                "formatted_body": to_matrix_html(piece),
            }
            relates = _relation(thread, reply_to if i == 0 else None)
            if relates:
                content["m.relates_to"] = relates
            last = await self._send_event(room, content)
        return last

    voice_replies = True

    async def send_voice(
        self, chat: str, audio: bytes, *, thread: str | None = None, reply_to: str | None = None
    ) -> str | None:
        """Upload the audio to the homeserver, then an m.audio event marked as a voice message
        (MSC3245, which Element shows as one)."""
        nio = _import_nio()
        room, thread = room_and_thread(chat, thread)
        client = await self._client()
        try:
            uploaded, _ = await client.upload(
                io.BytesIO(audio),
                content_type="audio/ogg",
                filename="reply.ogg",
                filesize=len(audio),
            )
        except OSError as exc:
            raise AdapterError(f"the Matrix homeserver could not be reached: {exc}") from None
        if not isinstance(uploaded, nio.UploadResponse):
            raise AdapterError(f"Matrix refused the audio upload: {uploaded}")
        content: dict[str, Any] = {
            "msgtype": "m.audio",
            "body": "reply.ogg",
            "url": uploaded.content_uri,
            "info": {"mimetype": "audio/ogg", "size": len(audio)},
            "org.matrix.msc1767.audio": {},
            "org.matrix.msc3245.voice": {},
        }
        relates = _relation(thread, reply_to)
        if relates:
            content["m.relates_to"] = relates
        return await self._send_event(room, content)

    async def _send_event(self, room: str, content: dict[str, Any]) -> str:
        nio = _import_nio()
        client = await self._client()
        try:
            resp = await client.room_send(room, "m.room.message", content)
        except nio.LocalProtocolError as exc:
            raise AdapterError(
                f"Matrix refused to send to {room}: {exc}", retryable=False
            ) from None
        except OSError as exc:
            raise AdapterError(
                f"the Matrix homeserver could not be reached: {exc}", retryable=True
            ) from None
        if isinstance(resp, nio.RoomSendError):
            retry = resp.status_code == "M_LIMIT_EXCEEDED"
            raise AdapterError(
                f"Matrix refused the message in {room}: {resp.message}", retryable=retry
            )
        return str(resp.event_id)

    async def edit(self, chat: str, message_id: str, text: str) -> None:
        room, _ = room_and_thread(chat, None)
        piece = split_text(text, LIMIT)[0] if text.strip() else "…"
        new = {
            "msgtype": "m.text",
            "body": piece,
            "format": "org.matrix.custom.html",
            "formatted_body": to_matrix_html(piece),
        }
        content = {
            **new,
            "body": f"* {piece}",
            "m.new_content": new,
            "m.relates_to": {"rel_type": "m.replace", "event_id": message_id},
        }
        await self._send_event(room, content)

    async def typing(self, chat: str, thread: str | None = None) -> None:
        room, _ = room_and_thread(chat, thread)
        await (await self._client()).room_typing(room, True, timeout=TYPING_MS)


def _relation(thread: str | None, reply_to: str | None) -> dict[str, Any]:
    if thread:
        return {
            "rel_type": "m.thread",
            "event_id": thread,
            "is_falling_back": reply_to is None,
            "m.in_reply_to": {"event_id": reply_to or thread},
        }
    return {"m.in_reply_to": {"event_id": reply_to}} if reply_to else {}


def _strip_reply_fallback(body: str) -> str:
    """Replies quote the original as `> ` lines first (the reply fallback): drop them."""
    lines = body.split("\n")
    if lines and lines[0].startswith("> <"):
        while lines and lines[0].startswith(">"):
            lines.pop(0)
    return "\n".join(lines).strip() or body


def _configured(settings: Settings) -> bool:
    section = settings.gateway.platform("matrix")
    has_server = section.get("homeserver") or section.get("api_base")
    has_secret = section.get("access_token") or section.get("password")
    return bool(has_server and section.get("user_id") and has_secret)


def _create(settings: Settings) -> PlatformAdapter:
    cfg = read_config(settings)
    owners = {o.partition(":")[2] for o in settings.gateway.owner if o.startswith("matrix:")}
    session = settings.home / "gateway" / "matrix_session.json"
    inviters = frozenset(cfg.allowed_users) | frozenset(owners)
    files = settings.home / "gateway" / "files" / "matrix"
    return MatrixAdapter(cfg, inviters, PairingStore(settings.home), session, files_dir=files)


PLATFORM = PlatformSpec(name="matrix", configured=_configured, create=_create)
