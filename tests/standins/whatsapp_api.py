"""A loopback stand-in for Meta's WhatsApp Cloud API, written from the public Cloud API docs:
the Graph endpoints Hermes calls and the webhook requests Meta makes.

Graph side (`api_base` = `base_url`, version in the path):
* `GET /{version}/{phone-number-id}` → the number's fields (a token check);
* `POST /{version}/{phone-number-id}/messages` → `{"messaging_product": "whatsapp",
  "contacts": [...], "messages": [{"id": "wamid…"}]}`; text bodies over 4,096 characters are
  refused (code 100); typing indicators (`"status": "read"`) are recorded apart;
* `GET /{version}/{media-id}` → `{"url": …}`, and the URL serves the bytes with the token.
* `POST /{version}/{phone-number-id}/media` (multipart upload) → `{"id": …}` for an audio reply.
Errors use Graph's envelope `{"error": {"message", "type", "code", "fbtrace_id"}}`.

Webhook side: `payload(...)` builds a `whatsapp_business_account` notification and
`signed(body)` its `X-Hub-Signature-256` header (HMAC-SHA256 with the app secret).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
from typing import Any

from aiohttp import web

from tests.standins.standin import LoopbackServer

VERSION = "v21.0"


def graph_error(code: int, message: str, kind: str = "OAuthException") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code, "fbtrace_id": "Atest"}}


class WhatsAppCloudAPI(LoopbackServer):
    def __init__(
        self,
        token: str = "EAAtest-token",
        phone_number_id: str = "1065550001",
        app_secret: str = "test-app-secret",
        verify_token: str = "test-verify-token",
    ) -> None:
        super().__init__()
        self.token = token
        self.phone_number_id = phone_number_id
        self.app_secret = app_secret
        self.verify_token = verify_token
        self.typing: list[dict[str, Any]] = []
        self.media: dict[str, tuple[bytes, str]] = {}
        self._ids = itertools.count(1)

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/media/{media_id}", self._media_bytes)
        app.router.add_post("/{version}/{phone}/messages", self._messages)
        app.router.add_post("/{version}/{phone}/media", self._upload)
        app.router.add_get("/{version}/{node}", self._node)

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.token}"

    def _unauthorized(self) -> web.Response:
        body = graph_error(190, "Invalid OAuth access token - Cannot parse access token")
        return web.json_response(body, status=401)

    async def _node(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._unauthorized()
        node = request.match_info["node"]
        if node == self.phone_number_id:
            return web.json_response({"display_phone_number": "15550001", "id": node})
        if node in self.media:
            url = f"{self.base_url}/media/{node}"
            return web.json_response({"url": url, "mime_type": self.media[node][1], "id": node})
        body = graph_error(100, f"Unsupported get request. Object with ID '{node}' does not exist")
        return web.json_response(body, status=400)

    async def _media_bytes(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._unauthorized()
        data, mime = self.media[request.match_info["media_id"]]
        return web.Response(body=data, content_type=mime)

    async def _upload(self, request: web.Request) -> web.Response:
        """`POST /{phone-number-id}/media` (multipart `file`, `type`, `messaging_product`)."""
        if not self._authorized(request):
            return self._unauthorized()
        form = await request.post()
        upload = form.get("file")
        if not isinstance(upload, web.FileField) or form.get("messaging_product") != "whatsapp":
            body = graph_error(100, "(#100) The parameter file is required.")
            return web.json_response(body, status=400)
        media_id = f"UP{next(self._ids)}"
        self.media[media_id] = (upload.file.read(), upload.content_type)
        return web.json_response({"id": media_id})

    async def _messages(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._unauthorized()
        body = await request.json()
        if body.get("status") == "read":
            self.typing.append(body)
            return web.json_response({"success": True})
        failed = self.failure("messages")
        if failed is not None:
            return failed
        text = (body.get("text") or {}).get("body", "")
        if len(text) > 4096:
            error = graph_error(100, "Param text['body'] must be at most 4096 characters long.")
            return web.json_response(error, status=400)
        wamid = f"wamid.TEST{next(self._ids)}"
        await self.record({**body, "id": wamid})
        return web.json_response(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": body.get("to"), "wa_id": body.get("to")}],
                "messages": [{"id": wamid}],
            }
        )

    # -- the webhook side ------------------------------------------------------------------

    def payload(
        self,
        sender: str,
        text: str | None = None,
        *,
        name: str = "Test User",
        context: str | None = None,
        message: dict[str, Any] | None = None,
    ) -> bytes:
        """One inbound message notification as Meta posts it."""
        msg: dict[str, Any] = message or {"type": "text", "text": {"body": text or ""}}
        msg = {"from": sender, "id": f"wamid.IN{next(self._ids)}", "timestamp": "1700000000", **msg}
        if context:
            msg["context"] = {"from": sender, "id": context}
        value = {
            "messaging_product": "whatsapp",
            "metadata": {
                "display_phone_number": "15550001",
                "phone_number_id": self.phone_number_id,
            },
            "contacts": [{"profile": {"name": name}, "wa_id": sender}],
            "messages": [msg],
        }
        note = {
            "object": "whatsapp_business_account",
            "entry": [{"id": "WABA1", "changes": [{"value": value, "field": "messages"}]}],
        }
        return json.dumps(note).encode("utf-8")

    def signed(self, body: bytes, secret: str | None = None) -> dict[str, str]:
        key = (secret or self.app_secret).encode("utf-8")
        digest = hmac.new(key, body, hashlib.sha256).hexdigest()
        return {"X-Hub-Signature-256": f"sha256={digest}", "Content-Type": "application/json"}

    def texts(self) -> list[str]:
        return [str(m["text"]["body"]) for m in self.sent if m.get("type") == "text"]
