"""Discord through discord.py: the bot logs in with DISCORD_BOT_TOKEN, keeps the gateway
websocket open (HELLO → IDENTIFY → READY → MESSAGE_CREATE; discord.py heartbeats, resumes and
reconnects), and answers through the REST API. `gateway.discord.api_base` points REST calls
(and so the gateway URL from `/gateway/bot`) at another server: tests use a loopback stand-in.

What a Discord user expects:
* the bot answers DMs, and in servers only when mentioned, only in
  `gateway.discord.allowed_channels` (ids; empty = every channel it can see) of
  `gateway.discord.allowed_guilds` (ids; empty = every server it was invited to); inside a
  thread where it was mentioned once, later messages reach it without a new mention;
* sessions (`gateway.discord.sessions`): `thread` (default) = one per thread, one per channel
  outside threads; `channel_user` = outside threads, one per person in each channel;
* answers reply to the message they answer, split at Discord's 2,000 characters (Discord
  renders Markdown itself, so it is sent as written); "Hermes is typing…" while working.
Intents: GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES and MESSAGE_CONTENT. MESSAGE_CONTENT is a
privileged intent: switch it on under Bot → Privileged Gateway Intents in the developer portal,
or Discord closes the connection (4014) and the adapter reports exactly that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
import yarl
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
from hermes.gateway.platforms import PlatformSpec, needs
from hermes.gateway.platforms.downloads import MAX_FILE_BYTES, fetch, safe_name
from hermes.gateway.platforms.telegram_format import split_text

log = logging.getLogger(__name__)

LIMIT = 2000
READY_WITHIN = 60.0
USER_THREAD = "user-"  # a per-person pseudo-thread in `channel_user` mode


class _NoVoiceNotice(logging.Filter):
    """discord.py warns at every client start that voice support is missing: Hermes has no
    voice, so the line would only alarm people."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "voice will NOT be supported" not in record.getMessage()


def _import_discord() -> Any:
    logging.getLogger("discord.client").addFilter(_NO_VOICE_NOTICE)
    with warnings.catch_warnings():  # discord.py's voice support imports audioop (3.11+
        warnings.simplefilter("ignore", DeprecationWarning)  # warns; Hermes has no voice)
        return require_library("discord", platform="Discord", library="discord.py", extra="discord")


_NO_VOICE_NOTICE = _NoVoiceNotice()


CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})
"""Where Discord serves attachments; other URLs in a message are not fetched."""


class DiscordConfig(PlatformConfig):
    """`gateway.discord.*` (DISCORD_BOT_TOKEN → token, DISCORD_ALLOWED_USERS)."""

    token: SecretStr | None = None
    allowed_guilds: CommaList = Field(default_factory=list)
    allowed_channels: CommaList = Field(default_factory=list)
    sessions: Literal["thread", "channel_user"] = "thread"
    guild_ready_timeout: float = Field(default=2.0, ge=0)
    """Seconds discord.py waits for the servers' GUILD_CREATE events before READY counts."""
    api_base: str = "https://discord.com"


def read_config(settings: Settings) -> DiscordConfig:
    return read_platform_config(settings, "discord", DiscordConfig)


class DiscordAdapter(PlatformAdapter):
    name = "discord"
    live_edits = True
    message_limit = LIMIT

    def __init__(self, cfg: DiscordConfig, files_dir: Path) -> None:
        assert cfg.token is not None
        self.cfg = cfg
        self.files_dir = files_dir
        self.client: Any = None
        self._runner: asyncio.Task[None] | None = None
        self._handler: InboundHandler | None = None
        self._ready = asyncio.Event()
        self._threads: set[int] = set()  # threads where the bot was mentioned

    # -- lifecycle -------------------------------------------------------------------------

    def _make_client(self) -> Any:
        discord = _import_discord()
        discord.http.Route.BASE = f"{self.cfg.api_base.rstrip('/')}/api/v10"
        intents = discord.Intents.none()
        intents.guilds = intents.guild_messages = intents.dm_messages = True
        intents.message_content = True
        client = discord.Client(
            intents=intents, max_messages=None, guild_ready_timeout=self.cfg.guild_ready_timeout
        )

        @client.event
        async def on_ready() -> None:
            self._ready.set()

        @client.event
        async def on_message(message: Any) -> None:
            await self._on_message(message)

        return client

    async def _login(self) -> Any:
        discord = _import_discord()
        assert self.cfg.token is not None
        client = self._make_client()
        try:
            await client.login(self.cfg.token.get_secret_value())
        except discord.LoginFailure:
            await client.close()
            raise AdapterError(
                "Discord refused DISCORD_BOT_TOKEN; copy the bot's token from the developer "
                "portal (Bot → Reset Token)",
                retryable=False,
            ) from None
        except (discord.HTTPException, OSError) as exc:
            await client.close()
            raise AdapterError(f"Discord login failed: {exc}", retryable=True) from None
        try:  # the gateway's address, as Discord asks bots to look it up (GET /gateway/bot)
            _shards, url, _limits = await client.http.get_bot_gateway()
        except (discord.GatewayNotFound, discord.HTTPException, OSError) as exc:
            await client.close()
            raise AdapterError(f"Discord's /gateway/bot failed: {exc}", retryable=True) from None
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
        return client

    async def connect(self) -> None:
        self._ready.clear()
        self.client = await self._login()
        self._runner = asyncio.get_running_loop().create_task(self._run(self.client))
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait(
                {ready, self._runner}, timeout=READY_WITHIN, return_when="FIRST_COMPLETED"
            )
        finally:
            ready.cancel()
        if self._runner.done():
            self._runner.result()  # raises the cause
            raise AdapterError("the Discord gateway closed before READY", retryable=True)
        if not self._ready.is_set():
            raise AdapterError(f"Discord sent no READY within {READY_WITHIN:.0f} s", retryable=True)

    async def _run(self, client: Any) -> None:
        discord = _import_discord()
        try:
            await client.connect(reconnect=True)
        except discord.PrivilegedIntentsRequired:
            raise AdapterError(
                "Discord refused the MESSAGE_CONTENT intent: enable it under Bot → Privileged "
                "Gateway Intents in the developer portal",
                retryable=False,
            ) from None
        except discord.ConnectionClosed as exc:
            raise AdapterError(
                f"the Discord gateway closed the connection ({exc.code})", retryable=True
            ) from None
        except (discord.GatewayNotFound, discord.HTTPException, OSError) as exc:
            raise AdapterError(f"the Discord gateway failed: {exc}", retryable=True) from None

    async def listen(self, handler: InboundHandler) -> None:
        self._handler = handler
        assert self._runner is not None
        await self._runner
        if self.client is not None and not self.client.is_closed():
            raise AdapterError("the Discord gateway connection ended", retryable=True)

    async def disconnect(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.close()
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.cancel()
            with contextlib.suppress(BaseException):
                await runner

    # -- inbound ---------------------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        inbound = self._normalize(message)
        if inbound is not None and message.attachments:
            inbound = await self._with_files(inbound, message.attachments)
        if inbound is not None and self._handler is not None:
            await self._handler(inbound)

    async def _with_files(self, inbound: Inbound, attachments: list[Any]) -> Inbound:
        """Attachments (images, voice messages, files) saved under gateway/files/discord, from
        Discord's CDN only; one that cannot be saved is named to the model by its URL."""
        saved: list[Attachment] = []
        unsaved: list[str] = []
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), timeout=60, follow_redirects=False
        ) as client:
            for item in attachments[:10]:
                url, name = str(item.url), str(item.filename or "file")
                if not self._cdn_host(url) or (item.size or 0) > MAX_FILE_BYTES:
                    unsaved.append(url)
                    continue
                path = (
                    self.files_dir
                    / safe_name(inbound.chat)
                    / f"{inbound.message_id}_{safe_name(name)}"
                )
                try:
                    saved.append(await fetch(client, url, path, name=name, mime=item.content_type))
                except (AdapterError, OSError) as exc:
                    log.warning("discord: could not save an attachment: %s", exc)
                    unsaved.append(url)
        text = inbound.text
        if unsaved:
            text = f"{text}\n\n[The user attached: {' '.join(unsaved)}]".strip()
        return replace(inbound, text=text, attachments=(*inbound.attachments, *saved))

    def _cdn_host(self, url: str) -> bool:
        parts = urlsplit(url)
        own = urlsplit(self.cfg.api_base).hostname
        return parts.scheme in ("http", "https") and (
            parts.hostname in CDN_HOSTS or parts.hostname == own
        )

    def _normalize(self, message: Any) -> Inbound | None:
        discord = _import_discord()
        me = self.client.user if self.client is not None else None
        author = message.author
        if me is None or author.bot or author.id == me.id:
            return None
        text = message.content or ""
        channel = message.channel
        thread: str | None = None
        if message.guild is not None:
            is_thread = isinstance(channel, discord.Thread)
            mentioned = me in message.mentions
            home = channel.parent_id if is_thread else channel.id
            if not self._allowed_place(message.guild.id, home):
                return None
            if is_thread:
                if mentioned:
                    self._threads.add(channel.id)
                elif channel.id not in self._threads:
                    return None
                chat, thread = str(channel.parent_id), str(channel.id)
            else:
                if not mentioned:
                    return None
                chat = str(channel.id)
                if self.cfg.sessions == "channel_user":
                    thread = f"{USER_THREAD}{author.id}"
            text = re.sub(rf"<@!?{me.id}>", "", text).strip()
        else:
            chat = str(channel.id)
        if not text and not message.attachments:
            return None
        ref = message.reference
        return Inbound(
            platform=self.name,
            chat=chat,
            thread=thread,
            sender=str(author.id),
            sender_name=getattr(author, "global_name", None) or author.name,
            text=text,
            message_id=str(message.id),
            reply_to=str(ref.message_id) if ref is not None and ref.message_id else None,
        )

    def _allowed_place(self, guild: int, channel: int) -> bool:
        if self.cfg.allowed_guilds and str(guild) not in self.cfg.allowed_guilds:
            return False
        return not self.cfg.allowed_channels or str(channel) in self.cfg.allowed_channels

    # -- outbound --------------------------------------------------------------------------

    async def _target(self, chat: str, thread: str | None) -> Any:
        if self.client is None:  # a one-off delivery (cron without `hermes serve`): REST only
            self.client = await self._login()
        channel_id = int(thread) if thread and not thread.startswith(USER_THREAD) else int(chat)
        return self.client.get_partial_messageable(channel_id)

    async def send(
        self,
        chat: str,
        text: str,
        *,
        thread: str | None = None,
        reply_to: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str | None:
        discord = _import_discord()
        channel = await self._target(chat, thread)
        last: str | None = None
        for i, piece in enumerate(split_text(text, LIMIT)):
            reference = None
            if reply_to and i == 0:
                reference = discord.MessageReference(
                    message_id=int(reply_to), channel_id=channel.id, fail_if_not_exists=False
                )
            try:
                sent = await channel.send(piece, reference=reference)
            except discord.Forbidden as exc:
                raise AdapterError(
                    f"Discord refused the message (missing permission in {channel.id}): {exc.text}",
                    retryable=False,
                ) from None
            except discord.HTTPException as exc:
                raise AdapterError(
                    f"Discord refused the message: {exc.text}", retryable=exc.status >= 500
                ) from None
            last = str(sent.id)
        return last

    async def edit(self, chat: str, message_id: str, text: str) -> None:
        channel = await self._target(chat, None)
        piece = split_text(text, LIMIT)[0] if text.strip() else "…"
        await channel.get_partial_message(int(message_id)).edit(content=piece)

    async def typing(self, chat: str, thread: str | None = None) -> None:
        await (await self._target(chat, thread)).typing()


def _create(settings: Settings) -> PlatformAdapter:
    return DiscordAdapter(read_config(settings), settings.home / "gateway" / "files" / "discord")


PLATFORM = PlatformSpec(name="discord", configured=needs("discord", "token"), create=_create)
