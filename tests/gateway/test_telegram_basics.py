"""Telegram end to end: python-telegram-bot ↔ loopback Bot API ↔ gateway ↔ agent ↔ fake model."""

from __future__ import annotations

from hermes.gateway.runner import Gateway
from hermes.testing.fake_model import FakeModel, Text
from hermes.testing.telegram_api import TelegramBotAPI

from .conftest import OWNER


async def test_owner_message_gets_an_answer_in_the_owner_scope(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("Hello **Ada**!"))
    await tg.user_says(OWNER, "hi there")
    await tg.wait_for_sent(1)
    sent = tg.sent[0]
    assert sent["text"] == "Hello <b>Ada</b>!"
    assert sent["parse_mode"] == "HTML"
    assert int(sent["chat_id"]) == OWNER
    assert fake.chat_requests()[0]["messages"][-1]["content"] == "hi there"
    session = gateway.runtime.store.get_session("default", f"telegram:{OWNER}")
    assert session is not None
