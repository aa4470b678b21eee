"""WhatsApp through Meta's official Cloud API: messages come in on `hermes serve`'s port at
`/gateway/whatsapp` (the webhook you register in the Meta app), answers go out through the
Graph API at `{gateway.whatsapp.api_base}/{api_version}/{WHATSAPP_PHONE_NUMBER_ID}/messages`.
No browser bridge, no unofficial client.

* The webhook's GET handshake answers `hub.challenge` only when `hub.verify_token` equals
  WHATSAPP_VERIFY_TOKEN; every POST must carry `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the
  raw body with WHATSAPP_APP_SECRET>`, else 403 before anything is read.
* WhatsApp's 24-hour rule: a business may send free-form text only within 24 hours of the
  person's last message (after that only pre-approved templates). Hermes answers people, so
  replies are always inside the window; a cron delivery outside it fails with a sentence that
  says so (Graph error 131047) instead of a bare code.
* Answers are split at 4,096 characters; Markdown becomes WhatsApp's own marks (*bold*,
  _italic_, ~strike~, ```mono```); rate-limit answers (HTTP 429, codes 4, 80007, 130429,
  131056) wait and retry; images, audio, video and documents are saved under
  `$HERMES_HOME/gateway/files/whatsapp/` and described to the model.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import Response

from hermes import tls
from hermes.config.settings import Settings
from hermes.gateway.base import (
    AdapterError,
    Attachment,
    Inbound,
    PlatformAdapter,
    PlatformConfig,
    read_platform_config,
)
from hermes.gateway.platforms import PlatformSpec, needs
from hermes.gateway.platforms.telegram_format import split_text
from hermes.gateway.webhooks import WebhookAdapter, forbidden

log = logging.getLogger(__name__)

LIMIT = 4096
WINDOW_SECONDS = 24 * 3600
SEND_ATTEMPTS = 4
RATE_LIMIT_CODES = {4, 80007, 130429, 131056}
WINDOW_CLOSED = 131047
BAD_TOKEN = 190
MEDIA_KINDS = {"image": "photo", "audio": "audio", "video": "video", "document": "document"}
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


class WhatsAppConfig(PlatformConfig):
    """`gateway.whatsapp.*` (WHATSAPP_* in the environment or .env)."""

    token: SecretStr | None = None
    phone_number_id: str | None = None
    app_secret: SecretStr | None = None
    verify_token: SecretStr | None = None
    api_base: str = "https://graph.facebook.com"
    api_version: str = "v21.0"


def read_config(settings: Settings) -> WhatsAppConfig:
    return read_platform_config(settings, "whatsapp", WhatsAppConfig)


def to_whatsapp(markdown: str) -> str:
    """Markdown as WhatsApp's formatting marks (it has no Markdown parser: `**x**` shows stars)."""
    text = re.sub(r"^#{1,6}\s+(.+)$", r"*\1*", markdown, flags=re.M)
    text = re.sub(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", r"*\1*", text, flags=re.S)
    text = re.sub(r"__(?=\S)(.+?)(?<=\S)__", r"*\1*", text, flags=re.S)
    text = re.sub(r"~~(?=\S)(.+?)(?<=\S)~~", r"~\1~", text)
    return re.sub(r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)", r"\1 (\2)", text)


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    """`X-Hub-Signature-256: sha256=<hex>` over the raw body, compared in constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(header[len("sha256=") :].strip().lower(), expected)


class WhatsAppAdapter(WebhookAdapter):
    name = "whatsapp"

    def __init__(self, cfg: WhatsAppConfig, files_dir: Path) -> None:
        super().__init__()
        assert cfg.token is not None and cfg.phone_number_id is not None
        self.cfg = cfg
        self.files_dir = files_dir
        self.base = f"{cfg.api_base.rstrip('/')}/{cfg.api_version}"
        self._token = cfg.token.get_secret_value()
        self._client: httpx.AsyncClient | None = None
        self.last_inbound: dict[str, tuple[float, str]] = {}  # chat -> (when, message id)

    # -- lifecycle -------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                verify=tls.httpx_context(),
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=30.0,
            )
        return self._client

    async def connect(self) -> None:
        missing = [
            var
            for var, value in (
                ("WHATSAPP_APP_SECRET", self.cfg.app_secret),
                ("WHATSAPP_VERIFY_TOKEN", self.cfg.verify_token),
            )
            if value is None
        ]
        if missing:
            raise AdapterError(
                f"WhatsApp needs {' and '.join(missing)} to verify Meta's webhook requests; "
                "set it in $HERMES_HOME/.env (see `hermes setup gateway whatsapp`)",
                retryable=False,
            )
        url = f"{self.base}/{self.cfg.phone_number_id}"
        try:
            reply = await self._http().get(url, params={"fields": "display_phone_number"})
        except httpx.HTTPError as exc:
            raise AdapterError(
                f"the WhatsApp Graph API could not be reached: {exc}", retryable=True
            ) from None
        if reply.status_code >= 400:
            raise _graph_error(reply, "checking the phone number id")

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # -- inbound ---------------------------------------------------------------------------

    async def webhook(self, request: Request) -> Response:
        if request.method == "GET":
            return self._handshake(request)
        body = await request.body()
        assert self.cfg.app_secret is not None
        header = request.headers.get("x-hub-signature-256")
        if not signature_ok(self.cfg.app_secret.get_secret_value(), body, header):
            return forbidden("missing or wrong X-Hub-Signature-256", self.name)
        try:
            payload = json.loads(body)
        except ValueError:
            return Response("the body is not JSON\n", status_code=400, media_type="text/plain")
        for inbound in await self._messages(payload):
            await self.handler(inbound)
        return Response("ok\n", media_type="text/plain")

    def _handshake(self, request: Request) -> Response:
        q = request.query_params
        assert self.cfg.verify_token is not None
        given = q.get("hub.verify_token", "").encode("utf-8")
        wanted = self.cfg.verify_token.get_secret_value().encode("utf-8")
        if q.get("hub.mode") != "subscribe" or not hmac.compare_digest(given, wanted):
            return forbidden("hub.verify_token does not match WHATSAPP_VERIFY_TOKEN", self.name)
        return Response(q.get("hub.challenge", ""), media_type="text/plain")

    async def _messages(self, payload: Any) -> list[Inbound]:
        found: list[Inbound] = []
        entries = payload.get("entry") if isinstance(payload, dict) else None
        for entry in entries or []:
            for change in entry.get("changes") or []:
                value = change.get("value") or {}
                metadata = value.get("metadata") or {}
                if str(metadata.get("phone_number_id", "")) != self.cfg.phone_number_id:
                    continue  # another number of the same app
                names = {
                    c.get("wa_id"): (c.get("profile") or {}).get("name")
                    for c in value.get("contacts") or []
                }
                for status in value.get("statuses") or []:
                    _log_status(status)
                for message in value.get("messages") or []:
                    inbound = await self._normalize(message, names)
                    if inbound is not None:
                        found.append(inbound)
        return found

    async def _normalize(self, message: dict[str, Any], names: dict[Any, Any]) -> Inbound | None:
        sender = str(message.get("from") or "")
        kind = message.get("type")
        if not sender:
            return None
        text = ""
        attachments: list[Attachment] = []
        if kind == "text":
            text = (message.get("text") or {}).get("body") or ""
        elif kind == "button":
            text = (message.get("button") or {}).get("text") or ""
        elif kind == "interactive":
            reply = message.get("interactive") or {}
            chosen = reply.get("button_reply") or reply.get("list_reply") or {}
            text = chosen.get("title") or ""
        elif kind in MEDIA_KINDS:
            media = message.get(kind) or {}
            text = media.get("caption") or ""
            saved = await self._save_media(sender, message.get("id"), kind, media)
            attachments.extend(saved)
        else:
            text = f"(sent a WhatsApp {kind} message, which Hermes cannot read)"
        if not text and not attachments:
            return None
        message_id = str(message.get("id") or "")
        self.last_inbound[sender] = (time.time(), message_id)
        context = message.get("context") or {}
        return Inbound(
            platform=self.name,
            chat=sender,
            sender=sender,
            sender_name=names.get(sender),
            text=text,
            message_id=message_id or None,
            reply_to=context.get("id"),
            attachments=tuple(attachments),
        )

    async def _save_media(
        self, chat: str, message_id: Any, kind: str, media: dict[str, Any]
    ) -> list[Attachment]:
        """Media ids resolve to a short-lived URL (GET /{media-id}) that needs the token."""
        media_id = media.get("id")
        mime = media.get("mime_type")
        name = media.get("filename") or f"{kind}_{media_id}"
        safe = _SAFE_NAME.sub("_", str(name))[:120] or "file"
        path = self.files_dir / _SAFE_NAME.sub("_", chat) / f"{message_id}_{safe}"
        try:
            info = await self._http().get(f"{self.base}/{media_id}")
            info.raise_for_status()
            data = await self._http().get(info.json()["url"])
            data.raise_for_status()
            await asyncio.to_thread(_write_private, path, data.content)
        except (httpx.HTTPError, KeyError, ValueError, OSError) as exc:
            log.warning("whatsapp: could not save a %s: %s", kind, exc)
            return []
        return [Attachment(path, MEDIA_KINDS[kind], str(name), mime, len(data.content))]

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
        for i, piece in enumerate(split_text(to_whatsapp(text), LIMIT)):
            body: dict[str, Any] = {
                "messaging_product": "whatsapp",
                "recipient_type": "individual",
                "to": chat,
                "type": "text",
                "text": {"preview_url": False, "body": piece},
            }
            if reply_to and i == 0:
                body["context"] = {"message_id": reply_to}
            answer = await self._post(chat, body)
            messages = answer.get("messages") or [{}]
            last = messages[0].get("id") or last
        return last

    voice_replies = True

    async def send_voice(
        self, chat: str, audio: bytes, *, thread: str | None = None, reply_to: str | None = None
    ) -> str | None:
        """Upload the audio (`POST /{phone-number-id}/media`), then an audio message with its
        media id: Ogg/Opus shows as a voice message."""
        url = f"{self.base}/{self.cfg.phone_number_id}/media"
        try:
            reply = await self._http().post(
                url,
                data={"messaging_product": "whatsapp", "type": "audio/ogg"},
                files={"file": ("reply.ogg", audio, "audio/ogg")},
            )
        except httpx.HTTPError as exc:
            raise AdapterError(f"the WhatsApp Graph API could not be reached: {exc}") from None
        if reply.status_code >= 400:
            raise _graph_error(reply, "uploading audio")
        media_id = reply.json().get("id")
        body: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": chat,
            "type": "audio",
            "audio": {"id": media_id},
        }
        if reply_to:
            body["context"] = {"message_id": reply_to}
        answer = await self._post(chat, body)
        return ((answer.get("messages") or [{}])[0]).get("id")

    async def typing(self, chat: str, thread: str | None = None) -> None:
        """Cloud API typing indicator: marks the person's last message read and shows
        "typing…" for up to 25 s (needs that message's id, so only after they wrote)."""
        last = self.last_inbound.get(chat)
        if last is None:
            return
        body = {
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": last[1],
            "typing_indicator": {"type": "text"},
        }
        await self._post(chat, body, attempts=1)

    async def _post(self, chat: str, body: dict[str, Any], attempts: int = SEND_ATTEMPTS) -> Any:
        url = f"{self.base}/{self.cfg.phone_number_id}/messages"
        for attempt in range(attempts):
            try:
                reply = await self._http().post(url, json=body)
            except httpx.HTTPError as exc:
                if attempt == attempts - 1:
                    raise AdapterError(
                        f"the WhatsApp Graph API could not be reached: {exc}", retryable=True
                    ) from None
                await asyncio.sleep(0.5 * 2**attempt)
                continue
            if reply.status_code < 400:
                return reply.json()
            code = _error_code(reply)
            retryable = reply.status_code == 429 or reply.status_code >= 500
            if (retryable or code in RATE_LIMIT_CODES) and attempt < attempts - 1:
                await asyncio.sleep(_retry_after(reply, attempt))
                continue
            if code == WINDOW_CLOSED:
                raise AdapterError(self._window_text(chat), retryable=False)
            raise _graph_error(reply, "sending a message")
        raise AdapterError("WhatsApp kept refusing; gave up", retryable=True)  # not reached

    def _window_text(self, chat: str) -> str:
        last = self.last_inbound.get(chat)
        since = (
            f"their last message was {int((time.time() - last[0]) // 3600)} h ago"
            if last
            else "they have not written since Hermes started"
        )
        return (
            f"WhatsApp refused the message to {chat}: businesses may send free-form text only "
            f"within 24 hours of the person's last message ({since}). Ask them to send a "
            "message first; outside the window only pre-approved templates can be sent."
        )


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(data)


def _log_status(status: dict[str, Any]) -> None:
    if status.get("status") != "failed":
        return
    for error in status.get("errors") or []:
        log.warning(
            "whatsapp: a message to %s failed: %s (%s)",
            status.get("recipient_id"),
            error.get("title") or error.get("message"),
            error.get("code"),
        )


def _error_code(reply: httpx.Response) -> int | None:
    try:
        code = reply.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return int(code) if isinstance(code, int | str) and str(code).isdigit() else None


def _retry_after(reply: httpx.Response, attempt: int) -> float:
    header = reply.headers.get("retry-after", "")
    return min(float(header), 60.0) if header.isdigit() else 0.5 * 2**attempt


def _graph_error(reply: httpx.Response, doing: str) -> AdapterError:
    try:
        error = reply.json()["error"]
        message, code = str(error.get("message")), error.get("code")
    except (ValueError, KeyError, TypeError, AttributeError):
        message, code = reply.text[:200], None
    if code == BAD_TOKEN or reply.status_code == 401:
        return AdapterError(
            f"WhatsApp refused WHATSAPP_TOKEN while {doing}: {message}; create a new "
            "(system user) access token in the Meta app",
            retryable=False,
        )
    return AdapterError(
        f"WhatsApp error while {doing} (HTTP {reply.status_code}, code {code}): {message}",
        retryable=reply.status_code >= 500 or reply.status_code == 429,
    )


def _create(settings: Settings) -> PlatformAdapter:
    return WhatsAppAdapter(read_config(settings), settings.home / "gateway" / "files" / "whatsapp")


def _normalize_number(sender: str) -> str:
    """WhatsApp ids are phone numbers without `+`, spaces or dashes (wa_id)."""
    return re.sub(r"[^0-9]", "", sender)


PLATFORM = PlatformSpec(
    name="whatsapp",
    configured=needs("whatsapp", "token", "phone_number_id"),
    create=_create,
    normalize_sender=_normalize_number,
)
