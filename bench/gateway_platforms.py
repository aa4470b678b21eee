"""Per-platform message-in → reply-out overhead for WhatsApp, SMS, Slack, Discord and Matrix
(used by `bench/gateway.py`). One gateway runs all four adapters at once, each against its loopback
stand-in (`tests.standins.*_api`), with the instant model; webhook platforms are posted to
the real ASGI app in-process (signed as Meta and Twilio sign), Slack events go over the Socket
Mode websocket and Discord's over its gateway websocket. The overhead is the time from the
message leaving the stand-in (or the webhook POST starting) to the answer arriving at the
stand-in, minus the model's own time for that turn."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import yaml
from instant_model import InstantModel
from tests.standins.discord_api import DiscordAPI
from tests.standins.slack_api import SlackAPI
from tests.standins.standin import LoopbackServer
from tests.standins.synapse import Person, Synapse
from tests.standins.twilio_api import TwilioAPI
from tests.standins.whatsapp_api import WhatsAppCloudAPI

from hermes.config.settings import load_settings
from hermes.gateway.runner import Gateway
from hermes.runtime import build_runtime
from hermes.server.app import create_app

PHONE = "15551230001"
SLACK_USER = "U0BENCH01"
DISCORD_USER = "100000000000000001"


def _write_config(home: Path, config: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


class Replies:
    def __init__(self, api: LoopbackServer) -> None:
        self.future: asyncio.Future[float] | None = None
        api.listeners.append(self._arrived)

    def _arrived(self, record: dict[str, Any]) -> None:
        if self.future is not None and not self.future.done():
            self.future.set_result(float(record["sent_at"]))

    def expect(self) -> asyncio.Future[float]:
        self.future = asyncio.get_running_loop().create_future()
        return self.future


async def _measure(
    model: InstantModel, api: LoopbackServer, say: Callable[[str], Awaitable[Any]], n: int
) -> list[float]:
    replies = Replies(api)
    out = []
    for i in range(n + 1):
        text = f"{type(api).__name__} message {i}"
        future = replies.expect()
        started = time.perf_counter()
        await say(text)
        arrived = await asyncio.wait_for(future, 30)
        if i:  # the first one warms the adapter up
            out.append(arrived - started - model.take(text))
        else:
            model.take(text)
    return out


async def platform_overheads(model: InstantModel, home: Path, n: int) -> dict[str, list[float]]:
    async with WhatsAppCloudAPI() as wa, TwilioAPI() as tw, SlackAPI() as sl, DiscordAPI() as dc:
        config = {
            "gateway": {
                "whatsapp": {"api_base": wa.base_url},
                "sms": {"api_base": tw.base_url},
                "slack": {"api_base": sl.base_url},
                "discord": {"api_base": dc.base_url},
            }
        }
        await asyncio.to_thread(_write_config, home, config)
        env = {
            "HERMES_HOME": str(home),
            "OPENAI_BASE_URL": model.base_url,
            "HERMES_MODEL": "fake-model",
            "WHATSAPP_TOKEN": wa.token,
            "WHATSAPP_PHONE_NUMBER_ID": wa.phone_number_id,
            "WHATSAPP_APP_SECRET": wa.app_secret,
            "WHATSAPP_VERIFY_TOKEN": wa.verify_token,
            "WHATSAPP_ALLOWED_USERS": PHONE,
            "TWILIO_ACCOUNT_SID": tw.account_sid,
            "TWILIO_AUTH_TOKEN": tw.auth_token,
            "TWILIO_PHONE_NUMBER": tw.number,
            "SMS_ALLOWED_USERS": f"+{PHONE}",
            "SLACK_BOT_TOKEN": sl.bot_token,
            "SLACK_APP_TOKEN": sl.app_token,
            "SLACK_ALLOWED_USERS": SLACK_USER,
            "DISCORD_BOT_TOKEN": dc.token,
            "DISCORD_ALLOWED_USERS": DISCORD_USER,
        }
        settings = load_settings(env=env)
        settings.memory.review_interval = 0
        runtime = build_runtime(settings)
        gateway = runtime.services.get(Gateway)
        app = create_app(runtime, close_runtime=False)
        await gateway.start()
        try:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://hermes.bench"
            ) as client:
                deadline = time.monotonic() + 60
                while not all(s.connected for s in gateway.status.values()):
                    assert time.monotonic() < deadline, gateway.snapshot()
                    await asyncio.sleep(0.05)
                await sl.wait_connected()
                await dc.wait_ready()

                async def whatsapp(text: str) -> None:
                    body = wa.payload(PHONE, text)
                    await client.post("/gateway/whatsapp", content=body, headers=wa.signed(body))

                async def sms(text: str) -> None:
                    form = tw.inbound(f"+{PHONE}", text)
                    sig = tw.signature("http://hermes.bench/gateway/sms", form)
                    await client.post(
                        "/gateway/sms", data=form, headers={"X-Twilio-Signature": sig}
                    )

                return {
                    "whatsapp": await _measure(model, wa, whatsapp, n),
                    "sms": await _measure(model, tw, sms, n),
                    "slack": await _measure(model, sl, lambda t: sl.dm(SLACK_USER, t), n),
                    "discord": await _measure(
                        model, dc, lambda t: dc.user_says(DISCORD_USER, t), n
                    ),
                }
        finally:
            await gateway.stop()
            await runtime.aclose()


async def matrix_overhead(model: InstantModel, home: Path, n: int) -> dict[str, list[float]]:
    """Matrix against a real Synapse (started here, about six seconds): the time from the
    person's PUT of a message to their own `/sync` showing the bot's answer, minus the model.
    Synapse's own work (persisting two events, waking two long polls) is inside the figure,
    so it is an upper bound for the gateway's part."""
    server = await asyncio.to_thread(Synapse(home / "synapse").start)
    try:
        bot = await asyncio.to_thread(server.register, "hermes", "bench-password")
        person = await asyncio.to_thread(Person, server, "person")
        env = {
            "HERMES_HOME": str(home),
            "OPENAI_BASE_URL": model.base_url,
            "HERMES_MODEL": "fake-model",
            "MATRIX_HOMESERVER": server.url,
            "MATRIX_USER_ID": bot,
            "MATRIX_PASSWORD": "bench-password",
            "MATRIX_ALLOWED_USERS": person.user_id,
        }
        settings = load_settings(env=env)
        settings.memory.review_interval = 0
        runtime = build_runtime(settings)
        gateway = runtime.services.get(Gateway)
        await gateway.start()
        try:
            room = await person.create_room([bot])
            deadline = time.monotonic() + 60
            while (await person.members(room)).get(bot) != "join":
                assert time.monotonic() < deadline, "the bot did not join"
                await asyncio.sleep(0.05)
            since = await person.next_batch()
            total = []
            for i in range(n + 1):
                text = f"matrix message {i}"
                started = time.perf_counter()
                await person.say(room, text)
                since, arrived = await person.wait_from(since, room, bot)
                own = model.take(text)
                if i:
                    total.append(arrived - started - own)
            return {"matrix (incl. Synapse)": total}
        finally:
            await gateway.stop()
            await runtime.aclose()
            await person.http.aclose()
    finally:
        await asyncio.to_thread(server.stop)
