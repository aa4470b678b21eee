"""SMS via Twilio: signed webhooks in, the official library's Messages resource out, 1,600-char
pieces, plain text, STOP/START/HELP, rate limits, and cron delivery."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.delivery import DeliveryError, Outbound
from hermes.gateway.delivery import GatewayDeliverer
from hermes.gateway.platforms.sms import to_plain
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.twilio_api import TwilioAPI, twilio_error

from .conftest import Served, until

OWNER = "+15551230001"
STRANGER = "+15559999999"
PATH = "/gateway/sms"
URL = "http://hermes.test" + PATH


@pytest.fixture
async def tw() -> AsyncIterator[TwilioAPI]:
    async with TwilioAPI() as api:
        yield api


def sms_env(tw: TwilioAPI) -> dict[str, str]:
    return {
        "TWILIO_ACCOUNT_SID": tw.account_sid,
        "TWILIO_AUTH_TOKEN": tw.auth_token,
        "TWILIO_PHONE_NUMBER": tw.number,
        "SMS_ALLOWED_USERS": "+1 (555) 123-0001",
        "HERMES_GATEWAY_OWNER": f"sms:{OWNER}",
    }


@pytest.fixture
async def served(tw: TwilioAPI, serve_gateway: Callable[..., Any]) -> AsyncIterator[Served]:
    async with serve_gateway(sms_env(tw), "sms", config={"api_base": tw.base_url}) as s:
        yield s


async def texts_in(served: Served, tw: TwilioAPI, sender: str, body: str) -> Any:
    form = tw.inbound(sender, body)
    headers = {"X-Twilio-Signature": tw.signature(URL, form)}
    return await served.client.post(PATH, data=form, headers=headers)


async def test_signed_text_is_answered_in_plain_pieces_of_at_most_1600(
    served: Served, tw: TwilioAPI, fake: FakeModel
) -> None:
    answer = "**Sure.** " + " ".join(f"w{i}" for i in range(700))
    fake.enqueue(Text(answer))
    r = await texts_in(served, tw, OWNER, "tell me")
    assert r.status_code == 200 and "<Response>" in r.text
    await tw.wait_for_sent(3)
    await until(lambda: len(tw.sent) == 3)
    assert all(len(t) <= 1600 for t in tw.texts())
    assert tw.texts()[0].startswith("Sure. w0")
    assert all(m["To"] == OWNER and m["From"] == tw.number for m in tw.sent)


async def test_bad_signatures_are_403_and_strangers_get_nothing(
    served: Served, tw: TwilioAPI, fake: FakeModel
) -> None:
    form = tw.inbound(OWNER, "hi")
    unsigned = await served.client.post(PATH, data=form)
    wrong = await served.client.post(
        PATH, data=form, headers={"X-Twilio-Signature": tw.signature(URL, form, "nope")}
    )
    other_url = await served.client.post(
        PATH, data=form, headers={"X-Twilio-Signature": tw.signature(URL + "x", form)}
    )
    assert [unsigned.status_code, wrong.status_code, other_url.status_code] == [403, 403, 403]
    assert (await texts_in(served, tw, STRANGER, "hello?")).status_code == 200
    await until(lambda: served.status("sms").refused == 1)
    assert fake.chat_requests() == [] and tw.sent == []


async def test_stop_help_start(served: Served, tw: TwilioAPI, fake: FakeModel, home: Path) -> None:
    await texts_in(served, tw, OWNER, "HELP")
    await tw.wait_for_sent(1)
    assert "/new" in tw.texts()[0] and fake.chat_requests() == []

    await texts_in(served, tw, OWNER, " stop ")
    optouts = json.loads((home / "gateway" / "sms_optout.json").read_text(encoding="utf-8"))
    assert optouts == [OWNER]
    deliverer = GatewayDeliverer(served.gateway.runtime)
    with pytest.raises(DeliveryError, match="texted STOP"):
        await deliverer.deliver(f"sms:{OWNER}", Outbound(text="digest", scope="default"))
    assert len(tw.sent) == 1 and fake.chat_requests() == []

    await texts_in(served, tw, OWNER, "START")
    where = await deliverer.deliver(f"sms:{OWNER}", Outbound(text="digest", scope="default"))
    assert where == f"sms:{OWNER}" and tw.texts()[-1] == "digest"


async def test_rate_limits_are_retried_and_errors_reported(
    served: Served, tw: TwilioAPI, fake: FakeModel
) -> None:
    tw.fail("messages", 429, twilio_error(429, 20429, "Too Many Requests"))
    fake.enqueue(Text("after the limit"))
    await texts_in(served, tw, OWNER, "hi")
    await tw.wait_for_sent(1)
    assert tw.texts() == ["after the limit"] and tw.calls.count("messages") == 2

    tw.fail("messages", 400, twilio_error(400, 21610, "Attempt to send to unsubscribed recipient"))
    deliverer = GatewayDeliverer(served.gateway.runtime)
    with pytest.raises(DeliveryError, match="opted out") as caught:
        await deliverer.deliver(f"sms:{OWNER}", Outbound(text="x", scope="default"))
    assert caught.value.retryable is False


async def test_wrong_credentials_are_reported(
    tw: TwilioAPI, serve_gateway: Callable[..., Any]
) -> None:
    env = {**sms_env(tw), "TWILIO_AUTH_TOKEN": "wrong-auth-token"}
    cfg = {"api_base": tw.base_url}
    async with serve_gateway(env, "sms", config=cfg, connected=False) as served:
        status = served.status("sms")
        await until(lambda: status.restarts >= 1)
        assert "TWILIO_AUTH_TOKEN" in status.last_error
        assert "wrong-auth-token" not in status.last_error


def test_markdown_becomes_plain_text() -> None:
    assert to_plain("# Hi\n**b** *i* `c` [l](https://x.test)") == "Hi\nb i c l (https://x.test)"
