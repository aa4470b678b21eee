"""Signal through signal-cli's HTTP daemon (`signal-cli -a +NUMBER daemon --http=HOST:PORT`):
incoming messages arrive on its Server-Sent Events stream (`GET /api/v1/events`), answers go
out as JSON-RPC calls (`POST /api/v1/rpc`: `send`, `sendTyping`). SIGNAL_API_BASE is the
daemon's URL, SIGNAL_NUMBER the account it runs, SIGNAL_ALLOWED_USERS who may talk to it
(phone numbers in E.164 form, or the account UUIDs Signal shows for people who hide theirs).

What a Signal user expects:
* direct messages are answered; in groups the bot answers only when mentioned, and a group is
  one conversation (one session), as a direct chat with one person is;
* answers quote the message they answer and are split at Signal's limit, sent as written;
* "typing…" while it works. The stream is resumed with `Last-Event-ID` after a reconnect or a
  restart (the last event id is kept in `$HERMES_HOME/gateway/signal_cursor.json`, or in the shared database on PostgreSQL), so messages
  that arrived while the connection was down are answered once (signal-cli keeps the last
  thousand events).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from hermes import tls
from hermes.config.settings import Settings
from hermes.fileio import atomic_write
from hermes.gateway.base import (
    AdapterError,
    Inbound,
    InboundHandler,
    PlatformAdapter,
    PlatformConfig,
    read_platform_config,
)
from hermes.gateway.platforms import PlatformSpec, needs
from hermes.gateway.platforms.telegram_format import split_text
from hermes.gateway.state import gateway_dir, read_json
from hermes.scopes import DEFAULT_SCOPE

if TYPE_CHECKING:
    from hermes.store.base import DocumentStore

log = logging.getLogger(__name__)

LIMIT = 2000  # Signal shows longer texts as a "read more" attachment: keep answers inline
GROUP = "group."  # chat ids of groups: `group.<base64 id>`; people are their number or UUID
CALL_TIMEOUT = 30.0


CURSOR_DOCUMENT = "gateway/signal_cursor.json"


def _cursors(text: str | None) -> dict[str, str]:
    try:
        found = json.loads(text or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


class SignalConfig(PlatformConfig):
    """`gateway.signal.*` (SIGNAL_API_BASE, SIGNAL_NUMBER, SIGNAL_ALLOWED_USERS)."""

    api_base: str | None = None
    number: str | None = None


def read_config(settings: Settings) -> SignalConfig:
    return read_platform_config(settings, "signal", SignalConfig)


def _sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str | None, str, str]]:
    """(id, event, data) of each Server-Sent Event in a stream of lines."""

    async def events() -> AsyncIterator[tuple[str | None, str, str]]:
        event_id: str | None = None
        name = "message"
        data: list[str] = []
        async for line in lines:
            if not line:
                if data:
                    yield event_id, name, "\n".join(data)
                event_id, name, data = None, "message", []
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                event_id = value
            elif field == "event":
                name = value
            elif field == "data":
                data.append(value)

    return events()


class SignalAdapter(PlatformAdapter):
    name = "signal"
    message_limit = LIMIT

    def __init__(self, cfg: SignalConfig, cursor_file: Path | None = None) -> None:
        assert cfg.api_base and cfg.number
        self.cfg = cfg
        self.base = cfg.api_base.rstrip("/")
        self.number = cfg.number
        self.cursor_file = cursor_file
        self.documents: DocumentStore | None = None
        self._http: httpx.AsyncClient | None = None
        self._ids = itertools.count(1)
        self._last_event = self._read_cursor()  # where the event stream resumes
        self._stopping = asyncio.Event()

    def share_state(self, documents: DocumentStore | None) -> None:
        """With a shared database the cursor is a store document, so the replica that takes
        the account over resumes where the last one stopped."""
        self.documents = documents
        if documents is not None:
            self._last_event = self._read_cursor()

    def _read_cursor(self) -> str | None:
        if self.documents is not None:
            saved = _cursors(self.documents.read_document(DEFAULT_SCOPE, CURSOR_DOCUMENT))
        elif self.cursor_file is not None:
            saved = read_json(self.cursor_file)
        else:
            return None
        value = saved.get(self.number)
        return value if isinstance(value, str) else None

    def _save_cursor(self, event_id: str) -> None:
        if self.documents is not None:
            with self.documents.edit_document(DEFAULT_SCOPE, CURSOR_DOCUMENT) as edit:
                assert edit is not None
                edit.new_text = json.dumps(_cursors(edit.text) | {self.number: event_id})
        elif self.cursor_file is not None:
            saved = read_json(self.cursor_file) | {self.number: event_id}
            atomic_write(self.cursor_file, json.dumps(saved))

    async def connect(self) -> None:
        self._stopping.clear()
        self._http = httpx.AsyncClient(
            verify=tls.httpx_context(), timeout=httpx.Timeout(CALL_TIMEOUT, read=None)
        )
        try:
            r = await self._http.get(f"{self.base}/api/v1/check")
        except httpx.HTTPError as exc:
            raise AdapterError(
                f"signal-cli at {self.base} cannot be reached: {exc}", retryable=True
            ) from None
        if r.status_code != 200:
            raise AdapterError(
                f"signal-cli at {self.base} is not ready (HTTP {r.status_code})", retryable=True
            )

    async def listen(self, handler: InboundHandler) -> None:
        http = self._client()
        headers = {"Accept": "text/event-stream"}
        if self._last_event is not None:
            headers["Last-Event-ID"] = self._last_event
        try:
            async with http.stream("GET", f"{self.base}/api/v1/events", headers=headers) as r:
                if r.status_code != 200:
                    raise AdapterError(
                        f"signal-cli refused the event stream (HTTP {r.status_code})",
                        retryable=True,
                    )
                async for event_id, name, data in _sse_events(r.aiter_lines()):
                    inbound = self._inbound(name, data)
                    if inbound is not None:
                        await handler(inbound)
                    if event_id is not None:
                        self._last_event = event_id
                        await asyncio.to_thread(self._save_cursor, event_id)
        except httpx.HTTPError as exc:
            if self._stopping.is_set():
                return
            raise AdapterError(
                f"the signal-cli event stream broke: {exc}", retryable=True
            ) from None
        if not self._stopping.is_set():
            raise AdapterError("signal-cli closed the event stream", retryable=True)

    async def disconnect(self) -> None:
        self._stopping.set()
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    # -- inbound ---------------------------------------------------------------------------

    def _inbound(self, name: str, data: str) -> Inbound | None:
        if name not in ("receive", "message"):
            return None
        try:
            payload = json.loads(data)
        except ValueError:
            log.warning("signal: an event that is not JSON was skipped")
            return None
        params = payload.get("params", payload) if isinstance(payload, dict) else {}
        envelope = (params.get("result") or params).get("envelope") or {}
        message = envelope.get("dataMessage") or {}
        text = message.get("message")
        sender = (
            envelope.get("sourceNumber") or envelope.get("sourceUuid") or envelope.get("source")
        )
        if not isinstance(text, str) or not text.strip() or not sender or sender == self.number:
            return None  # receipts, typing, reactions, sync copies of our own sends
        group = (message.get("groupInfo") or {}).get("groupId")
        if group and not self._mentioned(message):
            return None
        stamp = str(message.get("timestamp") or envelope.get("timestamp") or "")
        return Inbound(
            platform=self.name,
            chat=f"{GROUP}{group}" if group else str(sender),
            sender=str(sender),
            text=self._without_mention(text, message),
            sender_name=envelope.get("sourceName") or None,
            message_id=stamp or None,
            meta={"author": str(sender)},
        )

    def _mentioned(self, message: dict[str, Any]) -> bool:
        mentions = message.get("mentions") or []
        return any(m.get("number") == self.number for m in mentions if isinstance(m, dict))

    def _without_mention(self, text: str, message: dict[str, Any]) -> str:
        """Signal puts U+FFFC where a mention stands; the model needs the words around it."""
        return text.replace("\ufffc", "").strip() if message.get("mentions") else text.strip()

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
        for i, piece in enumerate(split_text(text, LIMIT)):
            params = {**self._to(chat), "message": piece}
            author = (meta or {}).get("author")
            if i == 0 and reply_to and author:
                params |= {"quoteTimestamp": int(reply_to), "quoteAuthor": author}
            result = await self._rpc("send", params)
            stamp = result.get("timestamp") if isinstance(result, dict) else None
            last = str(stamp) if stamp is not None else last
        return last

    async def typing(self, chat: str, thread: str | None = None) -> None:
        await self._rpc("sendTyping", self._to(chat))

    def _to(self, chat: str) -> dict[str, Any]:
        if chat.startswith(GROUP):
            return {"groupId": chat[len(GROUP) :]}
        return {"recipient": [chat]}

    async def _rpc(self, method: str, params: dict[str, Any]) -> Any:
        request = {"jsonrpc": "2.0", "method": method, "params": params, "id": next(self._ids)}
        try:
            r = await self._client().post(f"{self.base}/api/v1/rpc", json=request)
        except httpx.HTTPError as exc:
            raise AdapterError(f"signal-cli cannot be reached: {exc}", retryable=True) from None
        if r.status_code >= 500:
            raise AdapterError(f"signal-cli failed (HTTP {r.status_code})", retryable=True)
        try:
            body = r.json()
        except ValueError:
            raise AdapterError(
                f"signal-cli answered {method} with no JSON", retryable=True
            ) from None
        error = body.get("error") if isinstance(body, dict) else None
        if error:
            # JSON-RPC errors are about the request (an unknown number, a group we left):
            # the same call would fail again
            raise AdapterError(
                f"signal-cli refused {method}: {error.get('message', error)}", retryable=False
            )
        return body.get("result") if isinstance(body, dict) else None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                verify=tls.httpx_context(), timeout=httpx.Timeout(CALL_TIMEOUT, read=None)
            )
        return self._http


def _create(settings: Settings) -> PlatformAdapter:
    return SignalAdapter(read_config(settings), gateway_dir(settings.home) / "signal_cursor.json")


PLATFORM = PlatformSpec(
    name="signal", configured=needs("signal", "api_base", "number"), create=_create
)
