"""SMS through Twilio: texts come in on `hermes serve`'s port at `/gateway/sms` (the number's
"A message comes in" webhook), answers go out with the official `twilio` library's Messages
resource (`{gateway.sms.api_base}/2010-04-01/Accounts/{sid}/Messages.json`).

* Every webhook request must carry a valid `X-Twilio-Signature` (HMAC of the URL Twilio called
  plus the form fields, keyed with TWILIO_AUTH_TOKEN), else 403 before anything is read.
  Behind a proxy set `gateway.sms.webhook_url` to the public URL given to Twilio: the
  signature covers that exact URL.
* SMS is plain text: Markdown marks are removed; answers are cut into pieces of at most 1,600
  characters (Twilio's limit for one concatenated message).
* STOP keywords (STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT, OPTOUT, REVOKE) record an
  opt-out in `$HERMES_HOME/gateway/sms_optout.json` and reach nobody (Twilio confirms the
  opt-out itself); nothing is sent to that number again until it texts START (or UNSTOP, YES).
  HELP (or INFO) is answered with the chat commands, the same as `/help`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import Response

from hermes import tls
from hermes.config.settings import Settings
from hermes.fileio import atomic_write
from hermes.gateway.base import (
    AdapterError,
    Inbound,
    PlatformAdapter,
    PlatformConfig,
    read_platform_config,
    require_library,
)
from hermes.gateway.platforms import PlatformSpec, needs
from hermes.gateway.platforms.telegram_format import split_text
from hermes.gateway.webhooks import WebhookAdapter, forbidden
from hermes.store.base import DEFAULT_SCOPE, DocumentStore

log = logging.getLogger(__name__)

LIMIT = 1600
SEND_ATTEMPTS = 4
STOP_WORDS = {"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT", "REVOKE"}
START_WORDS = {"START", "UNSTOP", "YES"}
HELP_WORDS = {"HELP", "INFO"}
UNSUBSCRIBED = 21610  # Twilio: "Attempt to send to unsubscribed recipient"
RATE_LIMITED = {20429, 14107}
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>'


def _import_twilio() -> Any:
    return require_library("twilio.rest", platform="SMS", library="the twilio library", extra="sms")


class SmsConfig(PlatformConfig):
    """`gateway.sms.*` (TWILIO_* and SMS_ALLOWED_USERS in the environment or .env)."""

    account_sid: str | None = None
    auth_token: SecretStr | None = None
    phone_number: str | None = None
    api_base: str = "https://api.twilio.com"
    webhook_url: str | None = None


def read_config(settings: Settings) -> SmsConfig:
    return read_platform_config(settings, "sms", SmsConfig)


def normalize_number(number: str) -> str:
    """E.164 as Twilio writes it: `+` and digits (spaces, dashes and brackets dropped)."""
    digits = re.sub(r"[^0-9]", "", number)
    return f"+{digits}" if digits else number.strip()


def to_plain(markdown: str) -> str:
    """SMS shows every character: drop Markdown marks, keep the words and link targets."""
    text = re.sub(r"```[^\n`]*\n(.*?)```", r"\1", markdown, flags=re.S)
    text = re.sub(r"`([^`\n]+)`", r"\1", text)
    text = re.sub(r"^#{1,6}\s+", "", text, flags=re.M)
    text = re.sub(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__", r"\1\2", text, flags=re.S)
    text = re.sub(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])", r"\1", text)
    text = re.sub(r"~~(?=\S)(.+?)(?<=\S)~~", r"\1", text)
    return re.sub(r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)", r"\1 (\2)", text)


class OptOuts:
    """Numbers that texted STOP: `$HERMES_HOME/gateway/sms_optout.json`, a sorted list; with
    a shared database the same list is a store document, read on every check, so a STOP
    received by one replica silences every replica at once."""

    DOCUMENT = "gateway/sms_optout.json"

    def __init__(self, home: Path, documents: DocumentStore | None = None) -> None:
        self.path = home / "gateway" / "sms_optout.json"
        self.documents = documents
        self._lock = threading.Lock()
        try:
            found = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            found = []
        self.numbers: set[str] = {str(n) for n in found} if isinstance(found, list) else set()

    def has(self, number: str) -> bool:
        """Blocking with a shared database (call it off the loop)."""
        if self.documents is None:
            return number in self.numbers
        return number in _numbers(self.documents.read_document(DEFAULT_SCOPE, self.DOCUMENT))

    def set(self, number: str, opted_out: bool) -> None:
        if self.documents is not None:
            with self.documents.edit_document(DEFAULT_SCOPE, self.DOCUMENT) as edit:
                assert edit is not None
                numbers = _numbers(edit.text)
                (numbers.add if opted_out else numbers.discard)(number)
                edit.new_text = json.dumps(sorted(numbers), indent=1)
            return
        with self._lock:
            if (number in self.numbers) == opted_out:
                return
            (self.numbers.add if opted_out else self.numbers.discard)(number)
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write(self.path, json.dumps(sorted(self.numbers), indent=1))


def _numbers(text: str | None) -> set[str]:
    try:
        found = json.loads(text) if text else []
    except ValueError:
        return set()
    return {str(n) for n in found} if isinstance(found, list) else set()


class SmsAdapter(WebhookAdapter):
    name = "sms"

    def __init__(self, cfg: SmsConfig, home: Path) -> None:
        super().__init__()
        assert cfg.account_sid and cfg.auth_token and cfg.phone_number
        self.cfg = cfg
        self.sid = cfg.account_sid
        self.number = normalize_number(cfg.phone_number)
        self.home = home
        self.optouts = OptOuts(home)
        self._client: Any = None
        self._http: Any = None

    def share_state(self, documents: DocumentStore | None) -> None:
        """Keep opt-outs in the shared database (several replicas accept the webhooks)."""
        if documents is not None:
            self.optouts = OptOuts(self.home, documents)

    # -- lifecycle -------------------------------------------------------------------------

    def _twilio(self) -> Any:
        if self._client is None:
            rest = _import_twilio()
            assert self.cfg.auth_token is not None
            self._http = _httpx_client()
            client = rest.Client(
                self.sid, self.cfg.auth_token.get_secret_value(), http_client=self._http
            )
            client.api.base_url = self.cfg.api_base.rstrip("/")
            self._client = client
        return self._client

    async def connect(self) -> None:
        from twilio.base.exceptions import TwilioRestException

        try:
            await self._twilio().api.v2010.accounts(self.sid).fetch_async()
        except TwilioRestException as exc:
            if exc.status in (401, 403, 404):
                raise AdapterError(
                    "Twilio refused TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN; copy both from the "
                    "Twilio console",
                    retryable=False,
                ) from None
            raise AdapterError(f"Twilio account check failed: {exc.msg}", retryable=True) from None
        except OSError as exc:
            raise AdapterError(f"Twilio could not be reached: {exc}", retryable=True) from None

    async def close(self) -> None:
        http, self._http, self._client = self._http, None, None
        if http is not None:
            await http.close()

    # -- inbound ---------------------------------------------------------------------------

    def _signed_url(self, request: Request) -> str:
        if self.cfg.webhook_url:
            return self.cfg.webhook_url
        url = request.url
        proto = request.headers.get("x-forwarded-proto")
        host = request.headers.get("x-forwarded-host")
        if proto or host:
            url = url.replace(scheme=proto or url.scheme, netloc=host or url.netloc)
        return str(url)

    async def webhook(self, request: Request) -> Response:
        from twilio.request_validator import RequestValidator

        if request.method != "POST":
            return Response("Twilio webhooks are POSTs\n", status_code=405, media_type="text/plain")
        form = await request.form()
        params = {k: str(v) for k, v in form.multi_items()}
        signature = request.headers.get("x-twilio-signature", "")
        assert self.cfg.auth_token is not None
        validator = RequestValidator(self.cfg.auth_token.get_secret_value())
        if not signature or not validator.validate(self._signed_url(request), params, signature):
            return forbidden("missing or wrong X-Twilio-Signature", self.name)
        if params.get("AccountSid") != self.sid:
            return forbidden("the request names another Twilio account", self.name)
        inbound = await self._inbound(params)
        if inbound is not None:
            await self.handler(inbound)
        return Response(EMPTY_TWIML, media_type="text/xml")

    async def _inbound(self, params: dict[str, str]) -> Inbound | None:
        sender = normalize_number(params.get("From", ""))
        body = params.get("Body", "")
        keyword = body.strip().upper()
        if keyword in STOP_WORDS:
            log.info("sms: %s opted out (%s)", sender, keyword)
            await asyncio.to_thread(self.optouts.set, sender, True)
            return None
        if keyword in START_WORDS and await asyncio.to_thread(self.optouts.has, sender):
            log.info("sms: %s opted back in", sender)
            await asyncio.to_thread(self.optouts.set, sender, False)
            return None
        if keyword in HELP_WORDS:
            body = "/help"
        media = int(params.get("NumMedia", "0") or 0)
        if media:
            urls = ", ".join(params.get(f"MediaUrl{i}", "") for i in range(media))
            body = f"{body}\n\n[The user sent {media} picture(s) by MMS: {urls}]".strip()
        if not body.strip():
            return None
        return Inbound(
            platform=self.name,
            chat=sender,
            sender=sender,
            text=body,
            message_id=params.get("MessageSid"),
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
        to = normalize_number(chat)
        if await asyncio.to_thread(self.optouts.has, to):
            raise AdapterError(
                f"{to} texted STOP: Hermes sends nothing to that number until it texts START",
                retryable=False,
            )
        last: str | None = None
        for piece in split_text(to_plain(text), LIMIT):
            last = await self._create(to, piece)
        return last

    async def _create(self, to: str, body: str) -> str:
        from twilio.base.exceptions import TwilioRestException

        messages = self._twilio().api.v2010.accounts(self.sid).messages
        for attempt in range(SEND_ATTEMPTS):
            try:
                sent = await messages.create_async(to=to, from_=self.number, body=body)
                return str(sent.sid)
            except TwilioRestException as exc:
                if exc.code == UNSUBSCRIBED:
                    await asyncio.to_thread(self.optouts.set, to, True)
                    raise AdapterError(
                        f"{to} has opted out of texts from {self.number} (Twilio 21610)",
                        retryable=False,
                    ) from None
                limited = exc.status == 429 or exc.code in RATE_LIMITED or exc.status >= 500
                if limited and attempt < SEND_ATTEMPTS - 1:
                    await asyncio.sleep(0.5 * 2**attempt)
                    continue
                raise AdapterError(
                    f"Twilio refused the text to {to} (HTTP {exc.status}, code {exc.code}): "
                    f"{exc.msg}",
                    retryable=limited,
                ) from None
            except OSError as exc:
                if attempt == SEND_ATTEMPTS - 1:
                    raise AdapterError(
                        f"Twilio could not be reached: {exc}", retryable=True
                    ) from None
                await asyncio.sleep(0.5 * 2**attempt)
        raise AdapterError("Twilio kept refusing; gave up", retryable=True)  # not reached


def _httpx_client() -> Any:
    """The twilio library's async transport, on httpx: its own (aiohttp) one warns about
    aiohttp's deprecated BasicAuth on every request and retries on its own schedule."""
    from twilio.http import AsyncHttpClient
    from twilio.http.response import Response as TwilioResponse

    class HttpxTwilioClient(AsyncHttpClient):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(log, True, 30.0)
            self.client = httpx.AsyncClient(verify=tls.httpx_context(), timeout=30.0)

        async def request(
            self,
            method: str,
            uri: str,
            params: dict[str, object] | None = None,
            data: dict[str, object] | None = None,
            headers: dict[str, str] | None = None,
            auth: tuple[str, str] | None = None,
            timeout: float | None = None,  # noqa: ASYNC109 (the library's signature)
            allow_redirects: bool = False,
        ) -> Any:
            reply = await self.client.request(
                method.upper(),
                uri,
                params=params,  # type: ignore[arg-type]
                data=data,
                headers=headers,
                auth=auth,
                timeout=timeout or self.timeout,
                follow_redirects=allow_redirects,
            )
            return TwilioResponse(reply.status_code, reply.text, reply.headers)

        async def close(self) -> None:
            await self.client.aclose()

    return HttpxTwilioClient()


def _create(settings: Settings) -> PlatformAdapter:
    return SmsAdapter(read_config(settings), settings.home)


PLATFORM = PlatformSpec(
    name="sms",
    configured=needs("sms", "account_sid", "auth_token", "phone_number"),
    create=_create,
    normalize_sender=normalize_number,
)
