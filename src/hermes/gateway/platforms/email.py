"""Email: IMAP in (IDLE where the server offers it, re-issued every
`gateway.email.poll_seconds`; else polling at that interval), SMTP out. Replies are threaded (`In-Reply-To`, `References`,
`Re:` subject) and marked `Auto-Submitted: auto-replied` (RFC 3834) so other robots do not
answer them; auto-replies, bounces, list mail and our own messages are never answered.
Each email conversation (by its first Message-ID) is a thread: `email:<sender>:<hash>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
import smtplib
import ssl
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr

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
from hermes.gateway.platforms import PlatformSpec
from hermes.gateway.platforms.mailparse import (
    body_text,
    is_automatic,
    safe_address,
    sender_of,
    short_hash,
    thread_root,
)

log = logging.getLogger(__name__)

IDLE_SECONDS = 25 * 60  # servers drop IDLE after 30 min (RFC 2177)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def _imap_module() -> Any:
    return require_library("aioimaplib", platform="email", library="aioimaplib", extra="email")


class EmailConfig(PlatformConfig):
    """`gateway.email.*` (EMAIL_* in the environment or .env); `allowed_senders` is the
    allow-list (EMAIL_ALLOWED_USERS)."""

    imap_host: str | None = None
    imap_port: int = Field(default=993, ge=1, le=65535)
    smtp_host: str | None = None
    smtp_port: int = Field(default=587, ge=1, le=65535)
    username: str | None = None
    password: SecretStr | None = None
    address: str | None = None
    allowed_senders: CommaList = Field(default_factory=list)
    # auto: IMAP over TLS on 993 (plain only for a server on this machine), SMTP SSL on 465,
    # else STARTTLS (plain only on this machine); "ssl" / "starttls" / "plain" force it
    security: Literal["auto", "ssl", "starttls", "plain"] = "auto"
    poll_seconds: float = Field(default=60.0, gt=0)


def read_config(settings: Settings) -> EmailConfig:
    return read_platform_config(settings, "email", EmailConfig)


class EmailAdapter(PlatformAdapter):
    name = "email"

    def __init__(self, cfg: EmailConfig, files_dir: Path) -> None:
        self.cfg = cfg
        self.address = (cfg.address or cfg.username or "").lower()
        self.files_dir = files_dir
        self._imap: Any = None
        self._stopping = asyncio.Event()
        self.skipped: list[str] = []  # why messages were not answered (for status and tests)

    # -- IMAP ------------------------------------------------------------------------------

    async def connect(self) -> None:
        lib = _imap_module()
        cfg = self.cfg
        self._stopping.clear()
        if imap_uses_tls(cfg):
            imap = lib.IMAP4_SSL(host=cfg.imap_host, port=cfg.imap_port, timeout=30)
        else:
            imap = lib.IMAP4(host=cfg.imap_host, port=cfg.imap_port, timeout=30)
        try:
            await imap.wait_hello_from_server()
            password = cfg.password.get_secret_value() if cfg.password else ""
            response = await imap.login(cfg.username or self.address, password)
            if response.result != "OK":
                raise AdapterError(
                    f"IMAP login as {cfg.username or self.address} was refused; check "
                    "gateway.email.username and the password (EMAIL_PASSWORD)",
                    retryable=False,
                )
            response = await imap.select("INBOX")
            if response.result != "OK":
                raise AdapterError("IMAP: the INBOX cannot be opened", retryable=True)
        except (OSError, TimeoutError) as exc:
            raise AdapterError(
                f"IMAP {cfg.imap_host}:{cfg.imap_port}: {exc}", retryable=True
            ) from None
        self._imap = imap

    async def disconnect(self) -> None:
        self._stopping.set()
        imap, self._imap = self._imap, None
        if imap is not None:
            with contextlib.suppress(Exception):
                if imap.has_pending_idle():
                    imap.idle_done()
                await asyncio.wait_for(imap.logout(), 5)

    async def listen(self, handler: InboundHandler) -> None:
        if self._imap is None:
            await self.connect()
        imap = self._imap
        idle = imap.has_capability("IDLE")
        while not self._stopping.is_set():
            if await self._fetch_new(imap, handler):
                # mail that came while these were read may have had its notification lost
                # (the library drops one that arrives outside IDLE): look again before
                # waiting, after a NOOP, which makes the server take in what came meanwhile
                await imap.noop()
                continue
            if idle:
                await self._idle(imap)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self.cfg.poll_seconds)

    async def _idle(self, imap: Any) -> None:
        """Wait for the server to say something changed, at most `poll_seconds`: a
        notification can be lost (one sent between the search and the IDLE, which the IMAP
        library drops when no command is pending), and then a mail would wait for the next
        one, up to the 25 minutes an IDLE lasts."""
        waiter = await imap.idle_start(timeout=IDLE_SECONDS)
        try:
            await imap.wait_server_push(timeout=min(IDLE_SECONDS, self.cfg.poll_seconds))
        except TimeoutError:
            pass  # nothing arrived: re-issue IDLE before the server drops it
        finally:
            if imap.has_pending_idle():
                imap.idle_done()
            await asyncio.wait_for(waiter, 30)

    async def _fetch_new(self, imap: Any, handler: InboundHandler) -> int:
        """Read and hand on the unseen mail; how many there were."""
        response = await imap.uid_search("UNSEEN", charset=None)
        if response.result != "OK":
            raise AdapterError(f"IMAP search failed: {response.lines[-1:]!r}", retryable=True)
        uids = response.lines[0].decode().split() if response.lines else []
        for uid in uids:
            fetched = await imap.uid("fetch", uid, "(BODY.PEEK[])")
            raw = _literal(fetched.lines)
            await imap.uid("store", uid, "+FLAGS", "(\\Seen)")
            if raw is None:
                continue
            msg = BytesParser(policy=policy.default).parsebytes(raw)
            inbound = await asyncio.to_thread(self._normalize, msg)  # type: ignore[arg-type]
            if inbound is not None:
                await handler(inbound)
        return len(uids)

    def _normalize(self, msg: EmailMessage) -> Inbound | None:
        why = is_automatic(msg, self.address)
        if why:
            log.info("email: not answering a message (%s)", why)
            self.skipped.append(why)
            return None
        sender = sender_of(msg)
        subject = str(msg.get("Subject", "")).strip()
        message_id = str(msg.get("Message-ID", "")).strip() or None
        refs = str(msg.get("References", "")).split()
        if message_id:
            refs.append(message_id)
        attachments = self._save_attachments(msg, message_id or sender)
        return Inbound(
            platform=self.name,
            chat=safe_address(sender),
            thread=short_hash(thread_root(msg)),
            sender=safe_address(sender),
            sender_name=str(msg.get("From", "")),
            text=body_text(msg) or subject,
            message_id=message_id,
            reply_to=str(msg.get("In-Reply-To", "")).strip() or None,
            attachments=tuple(attachments),
            meta={"subject": subject, "message_id": message_id, "references": refs, "to": sender},
        )

    def _save_attachments(self, msg: EmailMessage, key: str) -> list[Attachment]:
        saved = []
        folder = self.files_dir / short_hash(key)
        for part in msg.iter_attachments():
            name = part.get_filename() or "attachment"
            payload = part.get_payload(decode=True)
            if not isinstance(payload, bytes):
                continue
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = folder / (_SAFE_NAME.sub("_", name)[:120] or "attachment")
            path.write_bytes(payload)
            saved.append(
                Attachment(path, "attachment", name, part.get_content_type(), len(payload))
            )
        return saved

    # -- SMTP ------------------------------------------------------------------------------

    async def send(
        self,
        chat: str,
        text: str,
        *,
        thread: str | None = None,
        reply_to: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str | None:
        meta = meta or {}
        message = self._compose(str(meta.get("to") or chat), text, meta)
        try:
            await asyncio.to_thread(self._smtp_send, message)
        except smtplib.SMTPRecipientsRefused as exc:
            raise AdapterError(f"SMTP refused the recipient: {exc}", retryable=False) from None
        except smtplib.SMTPAuthenticationError:
            raise AdapterError(
                "SMTP login was refused; check gateway.email.username and EMAIL_PASSWORD",
                retryable=False,
            ) from None
        except (smtplib.SMTPException, OSError) as exc:
            raise AdapterError(f"SMTP {self.cfg.smtp_host}: {exc}", retryable=True) from None
        return str(message["Message-ID"])

    def _compose(self, to: str, text: str, meta: dict[str, Any]) -> EmailMessage:
        message = EmailMessage()
        message["From"] = self.address
        message["To"] = to
        subject = str(meta.get("subject") or "").strip()
        original = meta.get("message_id")
        if original:
            message["Subject"] = subject if subject.lower().startswith("re:") else f"Re: {subject}"
            message["In-Reply-To"] = original
            message["References"] = " ".join(meta.get("references") or [original])
            message["Auto-Submitted"] = "auto-replied"
        else:
            message["Subject"] = subject or "Message from Hermes"
            message["Auto-Submitted"] = "auto-generated"
        message["Date"] = formatdate(localtime=True)
        domain = self.address.rpartition("@")[2] or None
        message["Message-ID"] = make_msgid(domain=domain)
        message.set_content(text)
        return message

    def _smtp_send(self, message: EmailMessage) -> None:
        cfg = self.cfg
        context = ssl.create_default_context()
        security = cfg.security
        if security == "auto":
            security = "ssl" if cfg.smtp_port == 465 else "starttls"
        smtp: smtplib.SMTP
        if security == "ssl":
            smtp = smtplib.SMTP_SSL(cfg.smtp_host or "", cfg.smtp_port, timeout=30, context=context)
        else:
            smtp = smtplib.SMTP(cfg.smtp_host or "", cfg.smtp_port, timeout=30)
        with smtp:
            smtp.ehlo()
            if security == "starttls":
                if smtp.has_extn("starttls"):
                    smtp.starttls(context=context)
                    smtp.ehlo()
                elif not _loopback(cfg.smtp_host) or cfg.security == "starttls":
                    raise AdapterError(
                        f"SMTP {cfg.smtp_host}:{cfg.smtp_port} offers no STARTTLS: refusing to "
                        "send the password and mail in clear text (use port 465, or set "
                        "gateway.email.security: plain to accept it)",
                        retryable=False,
                    )
            if cfg.password is not None and smtp.has_extn("auth"):
                smtp.login(cfg.username or self.address, cfg.password.get_secret_value())
            smtp.send_message(message)


def _loopback(host: str | None) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def imap_uses_tls(cfg: EmailConfig) -> bool:
    """TLS unless told `plain`, or (auto) a port other than 993 on this machine (a local
    bridge or test server); a remote server on another port is refused, never sent a password
    in clear."""
    if cfg.security == "plain":
        return False
    if cfg.security != "auto" or cfg.imap_port == 993:
        return True
    if _loopback(cfg.imap_host):
        return False
    raise AdapterError(
        f"IMAP {cfg.imap_host}:{cfg.imap_port} is not the TLS port 993: refusing to send the "
        "password in clear text (use port 993, or set gateway.email.security: plain)",
        retryable=False,
    )


def _literal(lines: list[Any]) -> bytes | None:
    """The message bytes of a FETCH answer (the bytearray literal aioimaplib returns)."""
    for line in lines:
        if isinstance(line, bytearray):
            return bytes(line)
    return None


def _configured(settings: Settings) -> bool:
    cfg = settings.gateway.platform("email")
    return bool(
        cfg.get("imap_host")
        and cfg.get("smtp_host")
        and (cfg.get("address") or cfg.get("username"))
    )


def _create(settings: Settings) -> PlatformAdapter:
    return EmailAdapter(read_config(settings), settings.home / "gateway" / "files" / "email")


PLATFORM = PlatformSpec(
    name="email",
    configured=_configured,
    create=_create,
    allow_key="allowed_senders",
    normalize_sender=lambda s: safe_address(s.lower()),
)
