"""A loopback stand-in for the Telegram Bot API, written from the public Bot API docs, so the
real python-telegram-bot library can be tested (and benchmarked) without the internet.

Serves `/bot<token>/<method>` for getMe, getUpdates (long polling with offset/timeout),
sendMessage, editMessageText, sendChatAction, sendVoice, sendAudio (multipart uploads), getFile,
and `/file/bot<token>/<path>`. Answers
use the Bot API's envelope: `{"ok": true, "result": …}` or `{"ok": false, "error_code": …,
"description": …, "parameters": {"retry_after": …}}`. HTML `parse_mode` is checked the way
Telegram does (known tags, balanced, valid entities) and rejected with 400 "Bad Request:
can't parse entities: …". Tests script users with `user_says(...)` and failures with `fail(...)`.

Every `getUpdates` is logged as a `Poll` (who made it: `identify(request)`, when it began and
ended); one that begins while another caller's is still waiting, with that caller still
connected, is logged in `overlaps` (Telegram itself would end the older one with 409
"Conflict: terminated by other getUpdates request"), so tests can check that only one
process polls a bot at a time.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp import web

TAGS = {
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "code",
    "pre",
    "a",
    "tg-spoiler",
    "span",
    "blockquote",
    "tg-emoji",
}


class _EntityCheck(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stack: list[str] = []
        self.problem: str | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag not in TAGS:
            self.problem = self.problem or f'unsupported start tag "{tag}"'
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problem = self.problem or f'can\'t find end tag corresponding to start tag "{tag}"'
            return
        self.stack.pop()

    def handle_entityref(self, name: str) -> None:
        if name not in ("lt", "gt", "amp", "quot"):
            self.problem = self.problem or f'unsupported entity "&{name};"'


def html_problem(text: str) -> str | None:
    check = _EntityCheck()
    check.feed(text)
    check.close()
    if check.problem is None and check.stack:
        check.problem = f'can\'t find end tag corresponding to start tag "{check.stack[-1]}"'
    return check.problem


@dataclass
class Failure:
    method: str
    status: int
    description: str
    retry_after: int | None = None


@dataclass
class StandIn:
    """State shared by the handlers; inspect `sent`, `edits`, `actions` in tests."""

    token: str
    bot_id: int = 777000
    sent: list[dict[str, Any]] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    voices: list[dict[str, Any]] = field(default_factory=list)
    """sendVoice / sendAudio calls: the fields, plus `method` and the uploaded `data`."""


@dataclass
class Poll:
    """One getUpdates call: who made it, when it began and ended (monotonic seconds)."""

    who: str
    began: float
    ended: float | None = None
    request: web.Request | None = field(default=None, repr=False)

    def caller_gone(self) -> bool:
        """The caller hung up (its process died) while the long poll was waiting."""
        transport = self.request.transport if self.request is not None else None
        return transport is None or transport.is_closing()


class TelegramBotAPI:
    """`async with TelegramBotAPI() as api:` → `api.base_url` for TELEGRAM_API_BASE."""

    def __init__(self, token: str = "123456:TEST-token") -> None:
        self.state = StandIn(token)
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._file_ids = itertools.count(1)
        self._failures: list[Failure] = []
        self._arrived = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.dead = False
        self.reject_html_containing: str | None = None
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        """Called with each accepted sendMessage (benchmarks time replies with it)."""
        self.identify: Callable[[web.Request], str] = lambda request: "caller"
        """Names the caller of a getUpdates (e.g. which process), for `polls`."""
        self.polls: list[Poll] = []
        self.overlaps: list[tuple[Poll, Poll]] = []

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> TelegramBotAPI:
        app = web.Application(client_max_size=20 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        async with self._arrived:
            self._arrived.notify_all()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> TelegramBotAPI:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def sent(self) -> list[dict[str, Any]]:
        return self.state.sent

    # -- scripting -------------------------------------------------------------------------

    async def user_says(
        self,
        chat_id: int,
        text: str | None = None,
        *,
        user_id: int | None = None,
        first_name: str = "Ada",
        thread_id: int | None = None,
        photo: bytes | None = None,
        document: tuple[str, bytes, str] | None = None,
        voice: bytes | None = None,
        chat_type: str = "private",
    ) -> int:
        """Queue a message from a user; returns its message_id."""
        message_id = next(self._message_ids)
        user = user_id if user_id is not None else chat_id
        message: dict[str, Any] = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": chat_type, "is_forum": thread_id is not None},
            "from": {"id": user, "is_bot": False, "first_name": first_name},
        }
        if text is not None:
            message["caption" if (photo or document or voice) else "text"] = text
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        if photo is not None:
            # Telegram sends several sizes, smallest first; the thumbnail is not the photo
            thumb_id = self._add_file(b"thumbnail bytes", "photos/t.jpg")
            file_id = self._add_file(photo, "photos/p.jpg")
            message["photo"] = [
                {"file_id": thumb_id, "file_unique_id": f"u{thumb_id}", "width": 9, "height": 9},
                {
                    "file_id": file_id,
                    "file_unique_id": f"u{file_id}",
                    "width": 90,
                    "height": 90,
                    "file_size": len(photo),
                },
            ]
        if document is not None:
            name, data, mime = document
            file_id = self._add_file(data, f"documents/{name}")
            message["document"] = {
                "file_id": file_id,
                "file_unique_id": f"u{file_id}",
                "file_name": name,
                "mime_type": mime,
                "file_size": len(data),
            }
        if voice is not None:
            file_id = self._add_file(voice, "voice/v.ogg")
            message["voice"] = {
                "file_id": file_id,
                "file_unique_id": f"u{file_id}",
                "duration": 2,
                "mime_type": "audio/ogg",
                "file_size": len(voice),
            }
        async with self._arrived:
            self._updates.append({"update_id": next(self._update_ids), "message": message})
            self._arrived.notify_all()
        return message_id

    async def go_down(self) -> None:
        """Every request fails with 503 from now on, including long polls already waiting."""
        self.dead = True
        async with self._arrived:
            self._arrived.notify_all()

    def come_back(self) -> None:
        self.dead = False

    def fail(
        self,
        method: str,
        status: int,
        description: str,
        *,
        retry_after: int | None = None,
        times: int = 1,
    ) -> None:
        """The next `times` calls of `method` answer with this error."""
        self._failures.extend(
            Failure(method, status, description, retry_after) for _ in range(times)
        )

    async def wait_for_sent(self, n: int, within: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + within
        while len(self.state.sent) < n:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"telegram stand-in: expected {n} sent messages, got {len(self.state.sent)}: "
                    f"{[m.get('text') for m in self.state.sent]}"
                )
            await asyncio.sleep(0.01)
        return self.state.sent

    def _add_file(self, data: bytes, path: str) -> str:
        file_id = f"F{next(self._file_ids)}"
        self.state.files[file_id] = data
        self.state.files[f"path:{file_id}/{path}"] = data
        return file_id

    # -- HTTP ------------------------------------------------------------------------------

    async def _params(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "application/json":
            data: dict[str, Any] = await request.json()
            return data
        form = await request.post()
        params: dict[str, Any] = {}
        for key, value in form.items():
            if isinstance(value, web.FileField):
                params[key] = {
                    "filename": value.filename,
                    "content_type": value.content_type,
                    "data": value.file.read(),
                }
            elif isinstance(value, str):
                try:
                    params[key] = json.loads(value)
                except ValueError:
                    params[key] = value
        return params

    async def _api(self, request: web.Request) -> web.Response:
        if self.dead:
            raise web.HTTPServiceUnavailable()
        method = request.match_info["method"]
        if request.match_info["token"] != self.state.token:
            return _error(401, "Unauthorized")
        self.state.calls.append(method)
        params = await self._params(request)
        for i, failure in enumerate(self._failures):
            if failure.method == method:
                del self._failures[i]
                return _error(failure.status, failure.description, failure.retry_after)
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            return _error(404, "Not Found: method not found")
        poll = self._poll_began(request) if method == "getUpdates" else None
        try:
            result = handler(params)
            if asyncio.iscoroutine(result):
                result = await result
        finally:
            if poll is not None:
                poll.ended = time.monotonic()
        if isinstance(result, web.Response):
            return result
        return web.json_response({"ok": True, "result": result})

    def _poll_began(self, request: web.Request) -> Poll:
        poll = Poll(self.identify(request), time.monotonic(), request=request)
        for other in self.polls:
            if other.ended is not None or other.who == poll.who:
                continue
            if other.caller_gone():
                other.ended = poll.began  # a dead caller's poll: over when it hung up
            else:
                self.overlaps.append((other, poll))
        self.polls.append(poll)
        return poll

    async def _file(self, request: web.Request) -> web.Response:
        data = self.state.files.get(f"path:{request.match_info['path']}")
        if data is None or request.match_info["token"] != self.state.token:
            return web.Response(status=404)
        return web.Response(body=data)

    # -- methods ---------------------------------------------------------------------------

    def _m_getMe(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": self.state.bot_id,
            "is_bot": True,
            "first_name": "Hermes",
            "username": "hermes_test_bot",
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    async def _m_getUpdates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        async with self._arrived:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
            if not self._updates and timeout > 0:
                try:
                    await asyncio.wait_for(self._arrived.wait(), timeout)
                except TimeoutError:
                    pass
            if self.dead:
                raise web.HTTPServiceUnavailable()
            return [u for u in self._updates if u["update_id"] >= offset][:limit]

    def _m_sendMessage(self, params: dict[str, Any]) -> Any:
        text = str(params.get("text", ""))
        if not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if len(text) > 4096:
            return _error(400, "Bad Request: message is too long")
        problem = self._parse_problem(params)
        if problem:
            return _error(400, f"Bad Request: can't parse entities: {problem}")
        message_id = next(self._message_ids)
        record = dict(params, message_id=message_id, sent_at=time.perf_counter())
        self.state.sent.append(record)
        for listener in self.listeners:
            listener(record)
        chat = {"id": int(params["chat_id"]), "type": "private"}
        result: dict[str, Any] = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": chat,
            "text": text,
            "from": self._m_getMe({}),
        }
        if params.get("message_thread_id"):
            result["message_thread_id"] = int(params["message_thread_id"])
        return result

    def _m_editMessageText(self, params: dict[str, Any]) -> Any:
        problem = self._parse_problem(params)
        if problem:
            return _error(400, f"Bad Request: can't parse entities: {problem}")
        self.state.edits.append(dict(params, edited_at=time.perf_counter()))
        for message in self.state.sent:  # the chat now shows the edited text
            if message["message_id"] == int(params["message_id"]):
                message.setdefault("first_text", message["text"])
                message["text"] = params["text"]
        return {
            "message_id": int(params["message_id"]),
            "date": int(time.time()),
            "chat": {"id": int(params["chat_id"]), "type": "private"},
            "text": params["text"],
        }

    def _m_sendVoice(self, params: dict[str, Any]) -> Any:
        return self._audio("sendVoice", "voice", params)

    def _m_sendAudio(self, params: dict[str, Any]) -> Any:
        return self._audio("sendAudio", "audio", params)

    def _audio(self, method: str, field_name: str, params: dict[str, Any]) -> Any:
        upload = params.get(field_name)
        if not isinstance(upload, dict) or not upload.get("data"):
            return _error(400, f"Bad Request: there is no {field_name} in the request")
        message_id = next(self._message_ids)
        self.state.voices.append({**params, "method": method, "data": upload["data"]})
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": int(params["chat_id"]), "type": "private"},
            field_name: {
                "file_id": f"V{message_id}",
                "file_unique_id": f"uV{message_id}",
                "duration": 1,
                "file_size": len(upload["data"]),
            },
        }

    def _m_sendChatAction(self, params: dict[str, Any]) -> bool:
        self.state.actions.append(params)
        return True

    def _m_getFile(self, params: dict[str, Any]) -> Any:
        file_id = str(params.get("file_id"))
        for key, data in self.state.files.items():
            if key.startswith(f"path:{file_id}/"):
                return {
                    "file_id": file_id,
                    "file_unique_id": f"u{file_id}",
                    "file_size": len(data),
                    "file_path": key[len("path:") :],
                }
        return _error(400, "Bad Request: invalid file_id")

    def _parse_problem(self, params: dict[str, Any]) -> str | None:
        if str(params.get("parse_mode", "")).upper() != "HTML":
            return None
        text = str(params.get("text", ""))
        if self.reject_html_containing and self.reject_html_containing in text:
            return 'unsupported start tag "x" at byte offset 0'
        return html_problem(text)


def _error(status: int, description: str, retry_after: int | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return web.json_response(body, status=status)
