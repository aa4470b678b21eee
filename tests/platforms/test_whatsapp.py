"""WhatsApp Cloud API: the webhook on the server's port (handshake, signatures), the Graph API
out (splitting, formatting, rate limits, the 24-hour window), and cron delivery."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.delivery import DeliveryError, Outbound
from hermes.gateway.delivery import GatewayDeliverer
from hermes.gateway.platforms.whatsapp import to_whatsapp
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.whatsapp_api import WhatsAppCloudAPI, graph_error

from .conftest import Served, until

OWNER = "15551230001"
FRIEND = "15551230002"
STRANGER = "15559999999"
URL = "/gateway/whatsapp"


@pytest.fixture
async def wa() -> AsyncIterator[WhatsAppCloudAPI]:
    async with WhatsAppCloudAPI() as api:
        yield api


def wa_env(wa: WhatsAppCloudAPI) -> dict[str, str]:
    return {
        "WHATSAPP_TOKEN": wa.token,
        "WHATSAPP_PHONE_NUMBER_ID": wa.phone_number_id,
        "WHATSAPP_APP_SECRET": wa.app_secret,
        "WHATSAPP_VERIFY_TOKEN": wa.verify_token,
        "WHATSAPP_ALLOWED_USERS": f"+{OWNER}, {FRIEND}",
        "HERMES_GATEWAY_OWNER": f"whatsapp:{OWNER}",
    }


@pytest.fixture
async def served(
    wa: WhatsAppCloudAPI, serve_gateway: Callable[..., Any], home: Path
) -> AsyncIterator[Served]:
    async with serve_gateway(wa_env(wa), "whatsapp", config={"api_base": wa.base_url}) as s:
        yield s


async def says(served: Served, wa: WhatsAppCloudAPI, sender: str, text: str, **kw: Any) -> int:
    body = wa.payload(sender, text, **kw)
    r = await served.client.post(URL, content=body, headers=wa.signed(body))
    return r.status_code


async def test_verify_token_handshake(served: Served, wa: WhatsAppCloudAPI) -> None:
    q = {"hub.mode": "subscribe", "hub.challenge": "1158201444", "hub.verify_token": ""}
    ok = await served.client.get(URL, params={**q, "hub.verify_token": wa.verify_token})
    assert ok.status_code == 200 and ok.text == "1158201444"
    wrong = await served.client.get(URL, params={**q, "hub.verify_token": "guess"})
    assert wrong.status_code == 403


async def test_unsigned_and_wrongly_signed_requests_are_403_and_never_reach_the_model(
    served: Served, wa: WhatsAppCloudAPI, fake: FakeModel
) -> None:
    body = wa.payload(OWNER, "hello")
    unsigned = await served.client.post(URL, content=body)
    wrong = await served.client.post(URL, content=body, headers=wa.signed(body, "not-the-secret"))
    tampered = await served.client.post(
        URL, content=body.replace(b"hello", b"hullo"), headers=wa.signed(body)
    )
    assert [unsigned.status_code, wrong.status_code, tampered.status_code] == [403, 403, 403]
    assert fake.chat_requests() == [] and served.status("whatsapp").messages_in == 0


async def test_owner_gets_an_answer_in_whatsapp_marks_and_a_stranger_gets_nothing(
    served: Served, wa: WhatsAppCloudAPI, fake: FakeModel
) -> None:
    fake.enqueue(Text("## Plan\n**Bold** and ~~gone~~, see [docs](https://x.test)"))
    assert await says(served, wa, STRANGER, "hi") == 200
    assert await says(served, wa, OWNER, "hello") == 200
    await wa.wait_for_sent(1)
    await until(lambda: served.status("whatsapp").refused == 1)
    assert wa.texts() == ["*Plan*\n*Bold* and ~gone~, see docs (https://x.test)"]
    assert wa.sent[0]["to"] == OWNER and wa.sent[0]["context"]["message_id"].startswith("wamid.IN")
    assert len(fake.chat_requests()) == 1


async def test_long_answers_split_at_4096_and_rate_limits_are_waited_out(
    served: Served, wa: WhatsAppCloudAPI, fake: FakeModel
) -> None:
    answer = "\n\n".join(f"Part {i}. " + "word " * 400 for i in range(5))
    wa.fail("messages", 429, graph_error(130429, "Rate limit hit"), **{"Retry-After": "0"})
    wa.fail(
        "messages",
        400,
        graph_error(131056, "(Business Account, Consumer Account) pair rate limit hit"),
    )
    fake.enqueue(Text(answer))
    await says(served, wa, FRIEND, "write a lot")
    await wa.wait_for_sent(3)
    assert all(len(t) <= 4096 for t in wa.texts())
    assert " ".join(wa.texts()).split() == answer.split()
    assert wa.calls.count("messages") == len(wa.sent) + 2


async def test_media_is_saved_and_described(
    served: Served, wa: WhatsAppCloudAPI, fake: FakeModel
) -> None:
    wa.media["MEDIA1"] = (b"%PDF-1.4 test", "application/pdf")
    fake.enqueue(Text("got it"))
    doc = {
        "type": "document",
        "document": {
            "id": "MEDIA1",
            "filename": "a.pdf",
            "mime_type": "application/pdf",
            "caption": "read this",
        },
    }
    await says(served, wa, OWNER, "", message=doc)
    await wa.wait_for_sent(1)
    content = fake.chat_requests()[0]["messages"][-1]["content"]
    assert content.startswith("read this") and "'a.pdf'" in content
    path = Path(content.split("saved at ")[1].rstrip("]"))
    assert await asyncio.to_thread(path.read_bytes) == b"%PDF-1.4 test"


async def test_cron_delivery_outside_the_24_hour_window_says_so(
    served: Served, wa: WhatsAppCloudAPI
) -> None:
    deliverer = GatewayDeliverer(served.gateway.runtime)
    where = await deliverer.deliver(
        f"whatsapp:{FRIEND}", Outbound(text="daily digest", scope="default")
    )
    assert where == f"whatsapp:{FRIEND}" and wa.texts() == ["daily digest"]
    wa.fail(
        "messages",
        400,
        graph_error(131047, "Re-engagement message", kind="OAuthException"),
    )
    with pytest.raises(DeliveryError, match="within 24 hours") as caught:
        await deliverer.deliver(f"whatsapp:{FRIEND}", Outbound(text="too late", scope="default"))
    assert caught.value.retryable is False


async def test_a_bad_token_is_reported_and_the_adapter_retries(
    wa: WhatsAppCloudAPI, serve_gateway: Callable[..., Any], home: Path
) -> None:
    env = {**wa_env(wa), "WHATSAPP_TOKEN": "wrong-token-value"}
    cfg = {"api_base": wa.base_url}
    async with serve_gateway(env, "whatsapp", config=cfg, connected=False) as served:
        status = served.status("whatsapp")
        await until(lambda: status.restarts >= 1)
        assert (
            "WHATSAPP_TOKEN" in status.last_error and "wrong-token-value" not in status.last_error
        )
        assert not status.connected
        r = await served.client.post(URL, content=b"{}", headers=wa.signed(b"{}"))
        assert r.status_code == 503


def test_markdown_to_whatsapp_marks() -> None:
    assert to_whatsapp("**a** __b__ ~~c~~ # no") == "*a* *b* ~c~ # no"
