"""Slack through the official slack_sdk in Socket Mode: no public URL, the app opens a
websocket (`apps.connections.open` with SLACK_APP_TOKEN) and Slack pushes events over it; answers
go out with `chat.postMessage` (SLACK_BOT_TOKEN). `gateway.slack.api_base` points both at
another server (tests use a loopback stand-in).

What a Slack user expects:
* the bot answers DMs, and in channels only when mentioned (`@Hermes …`); an answer in a
  channel goes into the thread of the message that mentioned it, and each thread is its own
  session (`slack:<channel>:<thread ts>`); later messages in that thread reach the bot without
  a new mention;
* a 👀 reaction on the message while the answer is being written (Slack has no typing
  indicator for bots), removed when the answer is posted;
* Markdown is sent as Slack mrkdwn (`*bold*`, `_italic_`, `<url|text>`); if Slack refuses the
  message it is sent again as plain text; answers are split at 4,000 characters;
* slash commands map onto the chat commands: `/stop`, `/new`, … directly, or one app command
  such as `/hermes new` (its first word is the command; other text is a normal message);
* allow-lists: SLACK_ALLOWED_USERS (user ids such as U012AB3CD) in the core, and
  `gateway.slack.allowed_teams` (workspace ids such as T012AB3CD) here: events from other
  workspaces are dropped before anything else.
Rate-limited Web API calls (HTTP 429) are retried after Slack's Retry-After by the SDK's own
retry handler; a dropped websocket is reopened by the SDK, and the supervisor restarts the
adapter if it stays down.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import Field, SecretStr

from hermes import tls
from hermes.config.fields import CommaList
from hermes.config.settings import Settings
from hermes.gateway.base import (
    AdapterError,
    Attachment,
    Inbound,
    InboundHandler,
    PlatformAdapter,
    PlatformConfig,
    read_platform_config,
    require_library,
)
from hermes.gateway.commands import NAMES as COMMAND_NAMES
from hermes.gateway.platforms import PlatformSpec, needs
from hermes.gateway.platforms.downloads import MAX_FILE_BYTES, fetch, safe_name
from hermes.gateway.platforms.telegram_format import split_text

log = logging.getLogger(__name__)

LIMIT = 4000
WORKING = "eyes"
DOWN_FOR = 60.0  # seconds the socket may stay down before the supervisor restarts the adapter
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
EMPTY = "(empty message)"
FALLBACK_ERRORS = {"invalid_blocks", "invalid_arguments", "msg_too_long", "invalid_attachments"}


def _import_slack() -> Any:
    return require_library("slack_sdk", platform="Slack", library="slack_sdk", extra="slack")


class SlackConfig(PlatformConfig):
    """`gateway.slack.*` (SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_ALLOWED_USERS)."""

    bot_token: SecretStr | None = None
    app_token: SecretStr | None = None
    allowed_teams: CommaList = Field(default_factory=list)
    api_base: str = "https://slack.com"


def read_config(settings: Settings) -> SlackConfig:
    return read_platform_config(settings, "slack", SlackConfig)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_mrkdwn(markdown: str) -> str:
    """Markdown as Slack mrkdwn; `&`, `<`, `>` escaped as Slack requires, code kept as is."""
    stash: list[str] = []

    def keep(fragment: str) -> str:
        stash.append(fragment)
        return f"\x00{len(stash) - 1}\x00"

    text = re.sub(
        r"```[^\n`]*\n(.*?)```",
        lambda m: keep(f"```{_escape(m.group(1))}```"),
        markdown,
        flags=re.S,
    )
    text = re.sub(r"`([^`\n]+)`", lambda m: keep(f"`{_escape(m.group(1))}`"), text)
    text = re.sub(
        r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)",
        lambda m: keep(f"<{m.group(2)}|{_escape(m.group(1))}>"),
        text,
    )
    text = _escape(text)
    text = re.sub(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])", r"_\1_", text)
    text = re.sub(r"^#{1,6}\s+(.+)$", r"*\1*", text, flags=re.M)
    text = re.sub(
        r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__",
        lambda m: f"*{m.group(1) or m.group(2)}*",
        text,
        flags=re.S,
    )
    text = re.sub(r"~~(?=\S)(.+?)(?<=\S)~~", r"~\1~", text)
    return re.sub("\x00(\\d+)\x00", lambda m: stash[int(m.group(1))], text)


def command_text(command: str, text: str) -> str:
    """A slash command as the gateway's command text: `/new` → `/new`, `/hermes new x` →
    `/new x`, `/hermes what's up` → `what's up`."""
    name = command.lstrip("/").lower()
    if name in COMMAND_NAMES:
        return f"/{name} {text}".strip()
    first, _, rest = text.strip().partition(" ")
    if first.lstrip("/").lower() in COMMAND_NAMES:
        return f"/{first.lstrip('/').lower()} {rest}".strip()
    return text.strip()


class SlackAdapter(PlatformAdapter):
    name = "slack"
    live_edits = True
    message_limit = LIMIT
    edit_interval = 1.2  # chat.update is a Tier 3 method: about 50 calls a minute

    def __init__(self, cfg: SlackConfig, files_dir: Path) -> None:
        assert cfg.bot_token is not None and cfg.app_token is not None
        self.cfg = cfg
        self.files_dir = files_dir
        self.api_url = cfg.api_base.rstrip("/") + "/api/"
        self.web: Any = None
        self.socket: Any = None
        self.bot_user: str | None = None
        self.team: str | None = None
        self._handler: InboundHandler | None = None
        self._stopping = asyncio.Event()
        self._threads: set[tuple[str, str]] = set()  # channel threads the bot takes part in
        self._working: dict[tuple[str, str | None], str] = {}  # (chat, thread) -> message ts
        self._reacted: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- lifecycle -------------------------------------------------------------------------

    def _web(self) -> Any:
        if self.web is None:
            _import_slack()
            from slack_sdk.http_retry.builtin_async_handlers import (
                AsyncRateLimitErrorRetryHandler,
                AsyncServerErrorRetryHandler,
            )
            from slack_sdk.web.async_client import AsyncWebClient

            assert self.cfg.bot_token is not None
            self.web = AsyncWebClient(
                token=self.cfg.bot_token.get_secret_value(),
                base_url=self.api_url,
                retry_handlers=[
                    AsyncRateLimitErrorRetryHandler(max_retry_count=3),
                    AsyncServerErrorRetryHandler(max_retry_count=2),
                ],
            )
        return self.web

    async def connect(self) -> None:
        from slack_sdk.errors import SlackApiError
        from slack_sdk.socket_mode.aiohttp import SocketModeClient
        from slack_sdk.web.async_client import AsyncWebClient

        self._stopping.clear()
        try:
            who = await self._web().auth_test()
        except SlackApiError as exc:
            raise _auth_error(exc, "SLACK_BOT_TOKEN (xoxb-…)") from None
        except OSError as exc:
            raise AdapterError(f"Slack could not be reached: {exc}", retryable=True) from None
        self.bot_user, self.team = who.get("user_id"), who.get("team_id")
        assert self.cfg.app_token is not None
        socket = SocketModeClient(
            app_token=self.cfg.app_token.get_secret_value(),
            web_client=AsyncWebClient(base_url=self.api_url),
            logger=logging.getLogger("hermes.gateway.slack.socket"),
        )
        socket.socket_mode_request_listeners.append(self._on_request)
        try:
            await socket.connect()
        except SlackApiError as exc:
            await socket.close()
            raise _auth_error(exc, "SLACK_APP_TOKEN (xapp-…, scope connections:write)") from None
        except Exception:
            await socket.close()
            raise
        self.socket = socket

    async def listen(self, handler: InboundHandler) -> None:
        self._handler = handler
        down_since: float | None = None
        loop = asyncio.get_running_loop()
        while not self._stopping.is_set():
            try:
                await asyncio.wait_for(self._stopping.wait(), 1.0)
            except TimeoutError:
                pass
            if self.socket is None or self._stopping.is_set():
                break
            if await self.socket.is_connected():
                down_since = None
            elif down_since is None:
                down_since = loop.time()
            elif loop.time() - down_since > DOWN_FOR:
                raise AdapterError("the Slack Socket Mode connection stayed down", retryable=True)

    async def disconnect(self) -> None:
        self._stopping.set()
        socket, self.socket = self.socket, None
        if socket is not None:
            await socket.close()
        web, self.web = self.web, None
        if web is not None and getattr(web, "session", None) is not None:
            await web.session.close()

    # -- inbound ---------------------------------------------------------------------------

    async def _on_request(self, client: Any, req: Any) -> None:
        from slack_sdk.socket_mode.response import SocketModeResponse

        await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
        payload = req.payload or {}
        if req.type == "events_api":
            team = payload.get("team_id")
            inbound = self._from_event(payload.get("event") or {}, team)
        elif req.type == "slash_commands":
            team = payload.get("team_id")
            inbound = self._from_command(payload)
        else:
            return
        if inbound is None or self._handler is None:
            return
        if self.cfg.allowed_teams and team not in self.cfg.allowed_teams:
            log.info("slack: dropped an event from workspace %s (not in allowed_teams)", team)
            return
        files = (payload.get("event") or {}).get("files") if req.type == "events_api" else None
        if files:
            inbound = await self._with_files(inbound, files)
        await self._handler(inbound)

    async def _with_files(self, inbound: Inbound, files: list[Any]) -> Inbound:
        """Shared files (photos, voice clips, documents) saved under gateway/files/slack. Their
        `url_private_download` needs the bot token, which is sent only to Slack's own hosts."""
        assert self.cfg.bot_token is not None
        token = self.cfg.bot_token.get_secret_value()
        saved: list[Attachment] = []
        async with httpx.AsyncClient(
            verify=tls.httpx_context(),
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
            follow_redirects=True,
        ) as client:
            for item in files[:10]:
                if not isinstance(item, dict):
                    continue
                url = str(item.get("url_private_download") or item.get("url_private") or "")
                name = str(item.get("name") or item.get("id") or "file")
                if not self._slack_host(url) or int(item.get("size") or 0) > MAX_FILE_BYTES:
                    log.warning("slack: a shared file %r was not downloaded", name)
                    continue
                folder = self.files_dir / safe_name(inbound.chat)
                path = folder / f"{inbound.message_id}_{safe_name(name)}"
                try:
                    saved.append(
                        await fetch(client, url, path, name=name, mime=item.get("mimetype"))
                    )
                except (AdapterError, OSError) as exc:
                    log.warning("slack: could not save a shared file: %s", exc)
        text = "" if inbound.text == EMPTY else inbound.text
        return replace(inbound, text=text, attachments=(*inbound.attachments, *saved))

    def _slack_host(self, url: str) -> bool:
        host = urlsplit(url).hostname or ""
        own = urlsplit(self.cfg.api_base).hostname or ""
        return urlsplit(url).scheme in ("http", "https") and (
            host == own or host == "slack.com" or host.endswith(".slack.com")
        )

    def _from_event(self, event: dict[str, Any], team: str | None) -> Inbound | None:
        kind = event.get("type")
        if kind not in ("message", "app_mention") or event.get("bot_id"):
            return None
        if event.get("subtype") not in (None, "file_share", "thread_broadcast"):
            return None
        user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
        if not user or not channel or not ts or user == self.bot_user:
            return None
        text = str(event.get("text") or "")
        thread = event.get("thread_ts")
        # a DM: every message, in the DM or in the thread it was written in
        if event.get("channel_type") != "im":
            if kind == "app_mention":
                thread = thread or ts
                self._threads.add((channel, thread))
            elif not (thread and (channel, thread) in self._threads) or self._mentions_me(text):
                return None  # channel chatter, or a mention (its app_mention event comes too)
        text = _MENTION.sub(lambda m: "" if m.group(1) == self.bot_user else m.group(0), text)
        self._working[(channel, thread)] = ts
        return Inbound(
            platform=self.name,
            chat=channel,
            thread=thread,
            sender=user,
            text=text.strip() or EMPTY,
            message_id=ts,
            meta={"team": team},
        )

    def _mentions_me(self, text: str) -> bool:
        return any(m.group(1) == self.bot_user for m in _MENTION.finditer(text))

    def _from_command(self, payload: dict[str, Any]) -> Inbound | None:
        user, channel = payload.get("user_id"), payload.get("channel_id")
        if not user or not channel:
            return None
        text = command_text(str(payload.get("command", "")), str(payload.get("text", "")))
        if not text:
            return None
        return Inbound(
            platform=self.name,
            chat=channel,
            sender=user,
            sender_name=payload.get("user_name"),
            text=text,
            meta={"team": payload.get("team_id")},
        )

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
            last = await self._post(chat, piece, thread)
        await self._done_working(chat, thread)
        return last

    async def _post(self, chat: str, piece: str, thread: str | None) -> str:
        from slack_sdk.errors import SlackApiError

        extra = {"thread_ts": thread} if thread else {}
        try:
            sent = await self._web().chat_postMessage(channel=chat, text=to_mrkdwn(piece), **extra)
        except SlackApiError as exc:
            if exc.response.get("error") not in FALLBACK_ERRORS:
                raise _send_error(exc) from None
            try:  # the formatted text was refused: the plain words instead
                sent = await self._web().chat_postMessage(
                    channel=chat, text=piece, mrkdwn=False, **extra
                )
            except SlackApiError as again:
                raise _send_error(again) from None
        except OSError as exc:
            raise AdapterError(f"Slack could not be reached: {exc}", retryable=True) from None
        return str(sent.get("ts"))

    async def edit(self, chat: str, message_id: str, text: str) -> None:
        from slack_sdk.errors import SlackApiError

        piece = split_text(text, LIMIT)[0] if text.strip() else "…"
        try:
            await self._web().chat_update(channel=chat, ts=message_id, text=to_mrkdwn(piece))
        except SlackApiError as exc:
            raise _send_error(exc) from None

    async def typing(self, chat: str, thread: str | None = None) -> None:
        """The 👀 reaction on the message being answered (once per message)."""
        ts = self._working.get((chat, thread))
        if ts is None or ts in self._reacted:
            return
        self._reacted.add(ts)
        await self._web().reactions_add(channel=chat, timestamp=ts, name=WORKING)

    async def _done_working(self, chat: str, thread: str | None) -> None:
        ts = self._working.pop((chat, thread), None)
        if ts is None or ts not in self._reacted:
            return
        self._reacted.discard(ts)
        try:
            await self._web().reactions_remove(channel=chat, timestamp=ts, name=WORKING)
        except Exception as exc:  # cosmetic
            log.debug("slack: could not remove the working reaction: %s", exc)


def _auth_error(exc: Any, which: str) -> AdapterError:
    error = exc.response.get("error")
    if error in ("invalid_auth", "not_authed", "account_inactive", "token_revoked"):
        return AdapterError(f"Slack refused {which}: {error}", retryable=False)
    return AdapterError(f"Slack refused to connect: {error}", retryable=True)


def _send_error(exc: Any) -> AdapterError:
    error = exc.response.get("error")
    status = exc.response.status_code
    if error in ("channel_not_found", "not_in_channel", "is_archived"):
        return AdapterError(
            f"Slack refused the message: {error} (invite the bot to the channel first)",
            retryable=False,
        )
    return AdapterError(
        f"Slack refused the message: {error} (HTTP {status})", retryable=status >= 429
    )


def _create(settings: Settings) -> PlatformAdapter:
    return SlackAdapter(read_config(settings), settings.home / "gateway" / "files" / "slack")


PLATFORM = PlatformSpec(
    name="slack", configured=needs("slack", "bot_token", "app_token"), create=_create
)
