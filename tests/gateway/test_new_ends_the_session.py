"""`/new` (and `/reset`) in a chat ends its session for the external memory provider too: the
Honcho stand-in sees the session end's recall of the user's general view."""

from __future__ import annotations

import pytest

from hermes.gateway.runner import Gateway
from hermes.testing.fake_model import FakeModel, Text
from tests.memory.providers.conftest import settle
from tests.memory.providers.honcho_api import HonchoAPI
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, texts


@pytest.mark.parametrize("command", ["/new", "/reset"])
async def test_new_ends_the_chats_session_at_the_provider(
    command: str, honcho: HonchoAPI, tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.default = Text("hello back")
    await tg.user_says(OWNER, "hello")
    await tg.wait_for_sent(1)
    await settle(gateway.runtime)
    before = honcho.general_recalls("owner")

    await tg.user_says(OWNER, command)
    await tg.wait_for_sent(2)
    assert "New conversation" in texts(tg)[1]
    await settle(gateway.runtime)

    assert honcho.general_recalls("owner") == before + 1
