"""Voice notes through Telegram: transcribed at the STT endpoint (the model endpoint by
default), answered as text, the transcript stored; without an endpoint the chat is told once."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.gateway.runner import Gateway
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.media import a_recording
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, texts, until, write_config


async def test_a_voice_note_is_heard_answered_and_stored_as_text(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.transcripts.append("remind me to water the plants")
    fake.enqueue(Text("I'll remind you."))
    await tg.user_says(OWNER, voice=a_recording())
    await tg.wait_for_sent(1)
    assert texts(tg) == ["I'll remind you."]
    [heard] = fake.audio
    assert heard["model"] == "whisper-1" and heard["bytes"] > 1000
    asked = fake.chat_requests()[0]["messages"][-1]
    assert asked == {"role": "user", "content": "remind me to water the plants"}
    stored = gateway.runtime.store.get_messages("default", f"telegram:{OWNER}")
    assert any(m.content == "remind me to water the plants" for m in stored)


async def test_without_speech_to_text_the_chat_is_told_once(
    tg: TelegramBotAPI, fake: FakeModel, home: Path, gw_env: dict[str, str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    write_config(home, f"stt:\n  base_url: http://127.0.0.1:{closed}/v1\n")
    settings = load_settings()
    settings.model.max_retries = 0
    runtime = build_runtime(settings)
    gw = runtime.services.get(Gateway)
    await gw.start()
    try:
        await until(lambda: gw.status["telegram"].connected)
        fake.enqueue(Text("got a file"), Text("got another"))
        await tg.user_says(OWNER, voice=a_recording())
        await tg.wait_for_sent(2, within=20)
        await tg.user_says(OWNER, voice=a_recording())
        await tg.wait_for_sent(3, within=20)
        told = [t for t in texts(tg) if "stt.base_url" in t]
        assert len(told) == 1, texts(tg)
        # the model still learns a voice note came, as a described file
        assert "voice" in fake.chat_requests()[0]["messages"][-1]["content"]
    finally:
        await gw.stop()
        await runtime.aclose()


async def test_downloading_a_file_never_logs_the_bot_token(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.transcripts.append("hello")
    fake.enqueue(Text("hi"))
    await tg.user_says(OWNER, voice=a_recording(0.1))
    await tg.wait_for_sent(1)
    assert "file" in caplog.text.lower()  # the download was logged
    assert tg.state.token not in caplog.text


async def test_a_separate_speech_to_text_endpoint_and_the_transcript_is_searchable(
    tg: TelegramBotAPI, fake: FakeModel, home: Path, gw_env: dict[str, str]
) -> None:
    """`stt.base_url`, `stt.model` and `stt.api_key` name an endpoint of its own (the model
    endpoint never gets the recording, nor the STT key); `session_search` then finds the words
    of the voice note in a later conversation."""
    with FakeModel(api_key="stt-key-0123456789") as stt:
        config = (
            f"stt:\n  base_url: {stt.base_url}\n  model: whisper-large-v3\n"
            "  api_key: stt-key-0123456789\n"
        )
        write_config(home, config)
        settings = load_settings()
        settings.model.max_retries = 0
        runtime = build_runtime(settings)
        gw = runtime.services.get(Gateway)
        await gw.start()
        try:
            await until(lambda: gw.status["telegram"].connected)
            stt.transcripts.append("the spare key is under the blue flowerpot")
            fake.enqueue(Text("Noted."))
            await tg.user_says(OWNER, voice=a_recording())
            await tg.wait_for_sent(1)
            [heard] = stt.audio
            assert heard["model"] == "whisper-large-v3" and heard["bytes"] > 1000
            assert fake.audio == []
            assert all("stt-key" not in json.dumps(h) for h in fake.headers)

            fake.enqueue(ToolCalls([("session_search", {"query": "flowerpot"})]), Text("found"))
            await tg.user_says(OWNER, "/new")
            await tg.user_says(OWNER, "where did I say the key is?")
            await tg.wait_for_sent(3)
            [found] = [
                m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"
            ]
            assert "blue flowerpot" in found
        finally:
            await gw.stop()
            await runtime.aclose()


async def test_a_recording_over_the_limit_is_named_as_too_long_not_as_no_endpoint(
    tg: TelegramBotAPI, fake: FakeModel, home: Path, gw_env: dict[str, str]
) -> None:
    """Over `stt.max_bytes` the endpoint is fine: the chat hears that this note is too long
    (each time), is never told that nothing transcribes, and a short note is still heard."""
    write_config(home, "stt:\n  max_bytes: 4000\n")
    settings = load_settings()
    settings.model.max_retries = 0
    runtime = build_runtime(settings)
    gw = runtime.services.get(Gateway)
    await gw.start()
    try:
        await until(lambda: gw.status["telegram"].connected)
        fake.enqueue(Text("a file"), Text("another file"), Text("heard you"))
        fake.transcripts.append("short and sweet")
        for n in (2, 4):
            await tg.user_says(OWNER, voice=a_recording(1.0))  # 32 KB
            await tg.wait_for_sent(n)
        await tg.user_says(OWNER, voice=a_recording(0.05))  # under 4,000 bytes
        await tg.wait_for_sent(5)
        told = [t for t in texts(tg) if "too long" in t]
        assert len(told) == 2, texts(tg)
        assert "(32 KB; <code>stt.max_bytes</code> is 4 KB)" in told[0]  # Telegram HTML
        assert not [t for t in texts(tg) if "stt.base_url" in t]
        assert len(fake.audio) == 1  # only the short note was sent to be transcribed
        assert fake.chat_requests()[-1]["messages"][-1]["content"] == "short and sweet"
    finally:
        await gw.stop()
        await runtime.aclose()
