"""Telegram through python-telegram-bot, long polling (`getUpdates`). Requests go to
`{gateway.telegram.api_base}/bot{token}/{method}` (TELEGRAM_API_BASE), so a self-hosted Bot API
server, or a test stand-in, works the same as api.telegram.org.

Answers over 4,096 characters are split on paragraphs; Markdown goes out as Telegram HTML and,
when Telegram cannot parse the entities, again as plain text; 429s wait the `retry_after`
Telegram asks for; forum topics are separate chats' threads; photos and documents are saved
under `$HERMES_HOME/gateway/files/telegram/` and described to the model as files.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

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
    require_library,
)
from hermes.gateway.platforms import PlatformSpec, needs
from hermes.gateway.platforms.telegram_format import LIMIT, split_text, to_html

log = logging.getLogger(__name__)

POLL_TIMEOUT = 30
SEND_ATTEMPTS = 4
# httpcore scans every pooled connection per request: a small pool of keep-alive connections
# is much faster under load than one connection per concurrent send
SEND_CONNECTIONS = 16
MAX_RETRY_AFTER = 120.0
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def _import_telegram() -> Any:
    # PTB 22 warns on every duration attribute (e.g. RetryAfter) unless the process opts in
    # to the timedelta form it will switch to; `retry_seconds` reads both forms.
    os.environ.setdefault("PTB_TIMEDELTA", "1")
    return require_library(
        "telegram", platform="Telegram", library="python-telegram-bot", extra="telegram"
    )


class TelegramConfig(PlatformConfig):
    """`gateway.telegram.*` (TELEGRAM_BOT_TOKEN, TELEGRAM_API_BASE, TELEGRAM_ALLOWED_USERS)."""

    token: SecretStr | None = None
    api_base: str = "https://api.telegram.org"


def read_config(settings: Settings) -> TelegramConfig:
    return read_platform_config(settings, "telegram", TelegramConfig)


def retry_seconds(exc: Any) -> float:
    """`RetryAfter`'s delay in seconds, read without PTB's int-vs-timedelta deprecation."""
    value = getattr(exc, "_retry_after", None)
    if value is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = exc.retry_after
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class _RedactToken(logging.Filter):
    """httpx and python-telegram-bot log request and file URLs, and Bot API URLs contain the
    token: never let it through."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def filter(self, record: logging.LogRecord) -> bool:
        if self.token in record.getMessage():
            record.msg = record.getMessage().replace(self.token, "<token>")
            record.args = ()
        return True


def _guard_logs(token: str) -> None:
    """Put the token's filter on httpx's logger and every python-telegram-bot logger (a
    logger's filter sees only its own records, so each needs one), once per token."""
    _import_telegram()  # its module loggers exist from here on
    names = ["httpx", "telegram", "telegram.Bot"]
    names += [n for n in logging.root.manager.loggerDict if n.startswith("telegram.")]
    for name in dict.fromkeys(names):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactToken) and f.token == token for f in logger.filters):
            logger.addFilter(_RedactToken(token))


class TelegramAdapter(PlatformAdapter):
    name = "telegram"
    live_edits = True
    message_limit = LIMIT

    def __init__(self, token: str, api_base: str, files_dir: Path) -> None:
        self.token = token
        _guard_logs(token)
        self.api_base = api_base.rstrip("/")
        self.files_dir = files_dir
        self._bot: Any = None
        self._stopping = asyncio.Event()
        self.username: str | None = None
        # queue sends here rather than inside httpcore, whose pool rescans its whole queue
        # for every request (quadratic with hundreds of chats answering at once)
        self._slots = asyncio.Semaphore(SEND_CONNECTIONS)
        self.retry_base = 0.5  # seconds before the first resend after a network error

    # -- lifecycle -------------------------------------------------------------------------

    async def _ensure_bot(self) -> Any:
        if self._bot is not None:
            return self._bot
        tg = _import_telegram()
        from telegram.request import HTTPXRequest

        bot = tg.Bot(
            self.token,
            base_url=f"{self.api_base}/bot",
            base_file_url=f"{self.api_base}/file/bot",
            request=HTTPXRequest(
                connection_pool_size=SEND_CONNECTIONS,
                pool_timeout=30.0,
                httpx_kwargs={"verify": tls.httpx_context()},
            ),
            get_updates_request=HTTPXRequest(
                read_timeout=POLL_TIMEOUT + 15.0, httpx_kwargs={"verify": tls.httpx_context()}
            ),
        )
        try:
            await self._initialize(bot)  # getMe: checks the token
        except BaseException:
            await _quiet_shutdown(bot)
            raise
        self._bot = bot
        self.username = bot.username
        return bot

    async def _initialize(self, bot: Any) -> None:
        tg = _import_telegram()
        try:
            await bot.initialize()
        except tg.error.InvalidToken:
            raise AdapterError(
                "Telegram refused the bot token (TELEGRAM_BOT_TOKEN); get a valid one from "
                "@BotFather",
                retryable=False,
            ) from None
        except tg.error.TelegramError as exc:
            raise AdapterError(f"Telegram getMe failed: {exc}", retryable=True) from None

    async def connect(self) -> None:
        self._stopping.clear()
        await self._ensure_bot()

    async def disconnect(self) -> None:
        self._stopping.set()
        bot, self._bot = self._bot, None
        if bot is not None:
            await _quiet_shutdown(bot)

    async def listen(self, handler: InboundHandler) -> None:
        bot = await self._ensure_bot()
        tg = _import_telegram()
        offset: int | None = None
        while not self._stopping.is_set():
            try:
                updates = await bot.get_updates(
                    offset=offset, timeout=POLL_TIMEOUT, allowed_updates=["message"]
                )
            except tg.error.RetryAfter as exc:
                await asyncio.sleep(retry_seconds(exc))
                continue
            except tg.error.InvalidToken:
                raise AdapterError("Telegram refused the bot token", retryable=False) from None
            except tg.error.TelegramError as exc:
                raise AdapterError(f"Telegram getUpdates failed: {exc}", retryable=True) from None
            for update in updates:
                offset = update.update_id + 1
                msg = update.message
                if msg is None or msg.from_user is None or msg.from_user.is_bot:
                    continue
                inbound = await self._normalize(msg)
                if inbound is not None:
                    await handler(inbound)

    # -- inbound ---------------------------------------------------------------------------

    async def _normalize(self, msg: Any) -> Inbound | None:
        thread = msg.message_thread_id if getattr(msg, "is_topic_message", False) else None
        attachments = await self._save_files(msg)
        text = msg.text or msg.caption or ""
        if not text and not attachments:
            return None
        user = msg.from_user
        reply_to = msg.reply_to_message.message_id if msg.reply_to_message else None
        return Inbound(
            platform=self.name,
            chat=str(msg.chat.id),
            thread=str(thread) if thread else None,
            sender=str(user.id),
            sender_name=user.full_name or user.username,
            text=text,
            message_id=str(msg.message_id),
            reply_to=str(reply_to) if reply_to else None,
            attachments=tuple(attachments),
        )

    async def _save_files(self, msg: Any) -> list[Attachment]:
        wanted: list[tuple[Any, str, str, str | None]] = []
        if msg.photo:
            best = msg.photo[-1]  # the largest size
            wanted.append((best, "photo", f"photo_{best.file_unique_id}.jpg", "image/jpeg"))
        if msg.document:
            doc = msg.document
            name = doc.file_name or f"document_{doc.file_unique_id}"
            wanted.append((doc, "document", name, doc.mime_type))
        if msg.voice:
            voice = msg.voice
            name = f"voice_{voice.file_unique_id}.ogg"
            wanted.append((voice, "voice", name, voice.mime_type or "audio/ogg"))
        if msg.audio:
            audio = msg.audio
            name = audio.file_name or f"audio_{audio.file_unique_id}"
            wanted.append((audio, "audio", name, audio.mime_type))
        saved = []
        for item, kind, name, mime in wanted:
            safe = _SAFE_NAME.sub("_", name)[:120] or "file"
            path = self.files_dir / str(msg.chat.id) / f"{msg.message_id}_{safe}"
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                tg_file = await item.get_file()
                await tg_file.download_to_drive(custom_path=path)
            except Exception as exc:
                log.warning("telegram: could not save a %s: %s", kind, exc)
                continue
            saved.append(Attachment(path, kind, name, mime, getattr(item, "file_size", None)))
        return saved

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
        for i, piece in enumerate(split_text(text)):
            last = await self._send_piece(chat, piece, thread, reply_to if i == 0 else None)
        return last

    async def _send_piece(
        self, chat: str, piece: str, thread: str | None, reply_to: str | None
    ) -> str:
        tg = _import_telegram()
        extra = _placement(tg, thread, reply_to)
        try:
            sent = await self._call("sendMessage", chat, to_html(piece), parse_mode="HTML", **extra)
        except tg.error.BadRequest as exc:
            if "can't parse entities" not in str(exc).lower():
                raise AdapterError(
                    f"Telegram refused the message: {exc}", retryable=False
                ) from None
            sent = await self._call("sendMessage", chat, piece, **extra)
        return str(sent.message_id)

    async def _call(self, method: str, chat: str, text: str, **kwargs: Any) -> Any:
        """sendMessage / editMessageText with Telegram's flood control honoured."""
        tg = _import_telegram()
        bot = await self._ensure_bot()
        for attempt in range(SEND_ATTEMPTS):
            try:
                async with self._slots:
                    if method == "editMessageText":
                        return await bot.edit_message_text(text, chat_id=chat, **kwargs)
                    return await bot.send_message(chat, text, **kwargs)
            except tg.error.RetryAfter as exc:
                if attempt == SEND_ATTEMPTS - 1:
                    raise AdapterError(
                        f"Telegram kept rate-limiting: {exc}", retryable=True
                    ) from None
                await asyncio.sleep(retry_seconds(exc))
            except (tg.error.TimedOut, tg.error.NetworkError) as exc:
                if isinstance(exc, tg.error.BadRequest):
                    raise
                if attempt == SEND_ATTEMPTS - 1:
                    raise AdapterError(
                        f"Telegram could not be reached: {exc}", retryable=True
                    ) from None
                await asyncio.sleep(self.retry_base * 2**attempt)
            except tg.error.Forbidden as exc:
                raise AdapterError(f"Telegram refused: {exc}", retryable=False) from None
        raise AdapterError("Telegram send gave up", retryable=True)  # not reached

    async def edit(self, chat: str, message_id: str, text: str) -> None:
        tg = _import_telegram()
        piece = split_text(text)[0] if text.strip() else "…"
        try:
            await self._call(
                "editMessageText",
                chat,
                to_html(piece),
                message_id=int(message_id),
                parse_mode="HTML",
            )
        except tg.error.BadRequest as exc:
            if "can't parse entities" not in str(exc).lower():
                raise AdapterError(f"Telegram refused the edit: {exc}", retryable=False) from None
            await self._call("editMessageText", chat, piece, message_id=int(message_id))

    voice_replies = True

    async def send_voice(
        self, chat: str, audio: bytes, *, thread: str | None = None, reply_to: str | None = None
    ) -> str | None:
        """sendVoice: Ogg/Opus shows as a voice note in the chat."""
        tg = _import_telegram()
        bot = await self._ensure_bot()
        extra = _placement(tg, thread, reply_to)
        try:
            async with self._slots:
                sent = await bot.send_voice(
                    chat, tg.InputFile(audio, filename="reply.ogg"), **extra
                )
        except tg.error.TelegramError as exc:
            raise AdapterError(f"Telegram refused the voice message: {exc}") from None
        return str(sent.message_id)

    async def typing(self, chat: str, thread: str | None = None) -> None:
        if self._slots.locked():
            return  # cosmetic: never queue an indicator behind real answers
        bot = await self._ensure_bot()
        async with self._slots:
            await bot.send_chat_action(
                chat, "typing", message_thread_id=int(thread) if thread else None
            )


async def _quiet_shutdown(bot: Any) -> None:
    """Close the bot's HTTP clients (PTB only closes them after a successful initialize)."""
    try:
        await bot.shutdown()
    except Exception as exc:
        log.debug("telegram shutdown: %s", exc)
    for request in getattr(bot, "_request", ()):
        try:
            await request.shutdown()
        except Exception as exc:
            log.debug("telegram request shutdown: %s", exc)


def _create(settings: Settings) -> PlatformAdapter:
    cfg = read_config(settings)
    assert cfg.token is not None
    return TelegramAdapter(
        cfg.token.get_secret_value(),
        cfg.api_base,
        settings.home / "gateway" / "files" / "telegram",
    )


PLATFORM = PlatformSpec(name="telegram", configured=needs("telegram", "token"), create=_create)


def _placement(tg: Any, thread: str | None, reply_to: str | None) -> dict[str, Any]:
    """Where a message goes in the chat: its forum topic, and the message it answers (sent
    anyway when that one was deleted meanwhile)."""
    extra: dict[str, Any] = {}
    if thread:
        extra["message_thread_id"] = int(thread)
    if reply_to:
        extra["reply_parameters"] = tg.ReplyParameters(
            int(reply_to), allow_sending_without_reply=True
        )
    return extra
