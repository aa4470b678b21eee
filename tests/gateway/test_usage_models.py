"""`/usage` in a messaging chat: this conversation's tokens, by model once a fallback answered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hermes.config.settings import FallbackModelSettings, Settings, load_settings
from hermes.gateway.runner import Gateway
from hermes.testing.fake_model import Error, FakeModel, Text
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, texts


@pytest.fixture
def backup() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


@pytest.fixture
def gw_settings(gw_env: dict[str, str], backup: FakeModel) -> Settings:
    settings = load_settings()
    settings.model.max_retries = 0
    settings.model.fallbacks = [
        FallbackModelSettings(name="backup-model", base_url=backup.base_url)
    ]
    settings.model.fallback_cooldown = 0
    return settings


async def test_usage_lists_tokens_per_model_of_this_conversation(
    tg: TelegramBotAPI, fake: FakeModel, backup: FakeModel, gateway: Gateway
) -> None:
    await tg.user_says(OWNER, "/usage")
    await tg.wait_for_sent(1)
    assert texts(tg)[0].startswith("Nothing used yet")
    fake.enqueue(Text("main answer", prompt_tokens=100, completion_tokens=10))
    await tg.user_says(OWNER, "hello")
    await tg.wait_for_sent(2)
    await tg.user_says(OWNER, "/usage")
    await tg.wait_for_sent(3)
    assert "100 prompt + 10 completion tokens over 1 model call(s)" in texts(tg)[2]
    assert "fake-model:" not in texts(tg)[2]
    fake.enqueue(Error(503, "overloaded"))
    backup.enqueue(Text("backup answer", prompt_tokens=200, completion_tokens=20))
    await tg.user_says(OWNER, "again")
    await tg.wait_for_sent(4)
    assert texts(tg)[3] == "backup answer"
    await tg.user_says(OWNER, "/usage")
    await tg.wait_for_sent(5)
    report = texts(tg)[4]
    assert "300 prompt + 30 completion tokens over 2 model call(s)" in report
    assert "backup-model: 200 prompt + 20 completion" in report
    assert "fake-model: 100 prompt + 10 completion" in report
