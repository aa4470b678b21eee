"""Telegram photos reach a vision model as images (the largest size, bounded), the caption is
stored and searchable; spoken replies (`tts.mode`) go out as voice notes after the text, and a
failing speech endpoint never costs the text."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.gateway.runner import Gateway
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.media import a_png, a_recording, data_url
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, texts, until, write_config


async def started(home: Path, config: str) -> Gateway:
    write_config(home, config)
    settings = load_settings()
    settings.model.max_retries = 0
    runtime = build_runtime(settings)
    gw = runtime.services.get(Gateway)
    await gw.start()
    await until(lambda: gw.status["telegram"].connected)
    return gw


@pytest.fixture
async def seeing(home: Path, gw_env: dict[str, str]) -> AsyncIterator[Gateway]:
    gw = await started(home, "model:\n  vision: true\n  image_max_bytes: 5000\n")
    try:
        yield gw
    finally:
        await gw.stop()
        await gw.runtime.aclose()


async def test_a_photo_reaches_a_vision_model_and_its_caption_is_searchable(
    tg: TelegramBotAPI, fake: FakeModel, seeing: Gateway
) -> None:
    png = a_png(rgb=(10, 200, 10))
    fake.enqueue(Text("A green square."))
    await tg.user_says(OWNER, "my lucky cactus sticker", photo=png)
    await tg.wait_for_sent(1)
    assert texts(tg) == ["A green square."]
    assert fake.images() == [data_url(png)]  # the largest size, not the thumbnail
    asked = fake.chat_requests()[-1]["messages"][-1]["content"]
    assert asked[0]["text"].startswith("my lucky cactus sticker")

    fake.enqueue(ToolCalls([("session_search", {"query": "cactus"})]), Text("found"))
    await tg.user_says(OWNER, "/new")
    await tg.user_says(OWNER, "what sticker did I show you?")
    await tg.wait_for_sent(3)
    [found] = [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    assert "lucky cactus sticker" in found and "base64" not in found


async def test_an_oversize_photo_stays_a_described_file(
    tg: TelegramBotAPI, fake: FakeModel, seeing: Gateway
) -> None:
    big = a_png(80, 80) + bytes(6000)
    fake.enqueue(Text("that file is big"))
    await tg.user_says(OWNER, "look", photo=big)
    await tg.wait_for_sent(1)
    assert fake.images() == []
    content = fake.chat_requests()[-1]["messages"][-1]["content"]
    assert "look" in content and "photo" in content and "saved at" in content


async def test_without_vision_a_photo_is_a_described_file(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("got it"))
    await tg.user_says(OWNER, "look", photo=a_png())
    await tg.wait_for_sent(1)
    assert fake.images() == []
    assert "saved at" in fake.chat_requests()[-1]["messages"][-1]["content"]


async def test_a_voice_note_is_answered_in_text_and_then_in_voice(
    tg: TelegramBotAPI, fake: FakeModel, home: Path, gw_env: dict[str, str]
) -> None:
    gw = await started(home, "tts:\n  mode: voice_in\n  voice: nova\n")
    try:
        fake.transcripts.append("what time is it")
        fake.enqueue(Text("It is **noon**, see [the clock](https://time.test)."), Text("Typed."))
        await tg.user_says(OWNER, voice=a_recording())
        await until(lambda: tg.state.voices)
        assert len(texts(tg)) == 1 and "noon" in texts(tg)[0]
        [voice] = tg.state.voices
        assert voice["method"] == "sendVoice" and voice["data"].startswith(b"RIFF")
        # spoken as words: no Markdown marks, no URL
        assert fake.speech[0]["input"] == "It is noon, see the clock."
        assert fake.speech[0]["voice"] == "nova" and fake.speech[0]["response_format"] == "opus"
        # a typed message gets text only under voice_in
        await tg.user_says(OWNER, "and typed?")
        await tg.wait_for_sent(2)
        assert len(tg.state.voices) == 1 and len(fake.speech) == 1
    finally:
        await gw.stop()
        await gw.runtime.aclose()


async def test_a_failing_speech_endpoint_never_costs_the_text(
    tg: TelegramBotAPI,
    fake: FakeModel,
    home: Path,
    gw_env: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    gw = await started(home, "tts:\n  mode: always\n")
    try:
        fake.speech_status = 500
        fake.enqueue(Text("Still here in text."))
        await tg.user_says(OWNER, "hello")
        await tg.wait_for_sent(1)
        await until(lambda: "no spoken reply" in caplog.text)
        assert texts(tg) == ["Still here in text."] and tg.state.voices == []
    finally:
        await gw.stop()
        await gw.runtime.aclose()
