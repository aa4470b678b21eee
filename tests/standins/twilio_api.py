"""A loopback stand-in for Twilio's Programmable Messaging, written from the public REST API
docs (2010-04-01), so the official `twilio` library can be tested without the internet.

REST side (`api_base` = `base_url`, HTTP basic auth with the account SID and auth token):
* `GET /2010-04-01/Accounts/{sid}.json` → the account (a credentials check);
* `POST /2010-04-01/Accounts/{sid}/Messages.json` (form `To`, `From`, `Body`) → 201 and the
  Message resource; bodies over 1,600 characters are refused with code 21617.
Errors use Twilio's envelope `{"code", "message", "more_info", "status"}`.

Webhook side: `inbound(...)` builds the form Twilio posts for an incoming text and
`signature(url, form)` its `X-Twilio-Signature` (base64 HMAC-SHA1, keyed with the auth
token, of the URL followed by every field name and value in name order), written from the
docs rather than taken from the library under test.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
from typing import Any

from aiohttp import BasicAuth, web

from tests.standins.standin import LoopbackServer


def twilio_error(status: int, code: int, message: str) -> dict[str, Any]:
    return {
        "code": code,
        "message": message,
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": status,
    }


class TwilioAPI(LoopbackServer):
    def __init__(
        self,
        account_sid: str = "AC" + "0" * 31 + "1",
        auth_token: str = "test-auth-token",
        number: str = "+15550001111",
    ) -> None:
        super().__init__()
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.number = number
        self._ids = itertools.count(1)

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/2010-04-01/Accounts/{sid}.json", self._account)
        app.router.add_post("/2010-04-01/Accounts/{sid}/Messages.json", self._create)

    def _refused(self, request: web.Request) -> web.Response | None:
        try:
            auth = BasicAuth.decode(request.headers.get("Authorization", ""))
        except ValueError:
            auth = None
        ok = (
            auth is not None
            and auth.login == self.account_sid
            and auth.password == self.auth_token
            and request.match_info["sid"] == self.account_sid
        )
        if ok:
            return None
        return web.json_response(twilio_error(401, 20003, "Authenticate"), status=401)

    async def _account(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        return web.json_response(
            {"sid": self.account_sid, "friendly_name": "Test", "status": "active"}
        )

    async def _create(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        failed = self.failure("messages")
        if failed is not None:
            return failed
        form = dict(await request.post())
        body = str(form.get("Body", ""))
        if len(body) > 1600:
            error = twilio_error(
                400, 21617, "The concatenated message body exceeds the 1600 character limit."
            )
            return web.json_response(error, status=400)
        sid = f"SM{next(self._ids):032d}"
        await self.record({"To": form.get("To"), "From": form.get("From"), "Body": body})
        return web.json_response(
            {
                "sid": sid,
                "account_sid": self.account_sid,
                "to": form.get("To"),
                "from": form.get("From"),
                "body": body,
                "status": "queued",
                "num_segments": str(len(body) // 153 + 1),
                "direction": "outbound-api",
                "uri": f"/2010-04-01/Accounts/{self.account_sid}/Messages/{sid}.json",
            },
            status=201,
        )

    # -- the webhook side ------------------------------------------------------------------

    def inbound(self, sender: str, body: str, **extra: str) -> dict[str, str]:
        return {
            "MessageSid": f"SM{next(self._ids):032d}",
            "AccountSid": self.account_sid,
            "From": sender,
            "To": self.number,
            "Body": body,
            "NumMedia": "0",
            **extra,
        }

    def signature(self, url: str, form: dict[str, str], token: str | None = None) -> str:
        data = url + "".join(f"{k}{form[k]}" for k in sorted(form))
        key = (token or self.auth_token).encode("utf-8")
        mac = hmac.new(key, data.encode("utf-8"), hashlib.sha1).digest()
        return base64.b64encode(mac).decode("ascii")

    def texts(self) -> list[str]:
        return [str(m["Body"]) for m in self.sent]
