"""Live answers through the Telegram stand-in: one message per turn, edited as the answer
streams, at about one edit a second, slower after flood control, finished with the final text."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hermes.gateway.platforms.telegram_format import split_text, to_html
from hermes.gateway.runner import Gateway
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, until, write_config

ANSWER = "The **tide** rises twice a day, pulled by the moon and, less so, by the sun. " * 3


def slow(text: str, seconds: float) -> Text:
    """`text` streamed over about `seconds`, in 8-character chunks."""
    chunks = max(len(text) // 8, 1)
    return Text(text, chunk_chars=8, delay=seconds / chunks)


async def test_a_slow_answer_is_one_message_edited_as_it_streams(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(slow(ANSWER, 3.5))
    asked = time.perf_counter()
    await tg.user_says(OWNER, "why are there tides?")
    await until(lambda: tg.state.edits and "▍" not in tg.state.edits[-1]["text"], within=15)

    assert len(tg.sent) == 1, "the answer is one message, not one per chunk"
    first = tg.sent[0]
    assert first["sent_at"] - asked < 2.0, "the first text shows before the answer is done"
    assert len(first["first_text"]) < len(to_html(ANSWER.strip()))
    assert first["text"] == to_html(ANSWER.strip()), "the chat shows the whole answer"
    # the last edit is exactly what a whole (non-streamed) answer would have been
    assert tg.state.edits[-1]["text"] == to_html(ANSWER.strip())
    assert tg.state.edits[-1]["parse_mode"] == "HTML"
    assert all(int(e["message_id"]) == first["message_id"] for e in tg.state.edits)
    # about one edit a second: never two intermediate edits closer than the interval allows
    times = [first["sent_at"]] + [e["edited_at"] for e in tg.state.edits[:-1]]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert gaps and min(gaps) >= 0.9, gaps
    assert 2 <= len(tg.state.edits) <= 6


async def test_a_quick_answer_goes_out_whole_without_edits(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("Hello **Ada**!"))
    await tg.user_says(OWNER, "hi")
    await tg.wait_for_sent(1)
    assert tg.sent[0]["text"] == "Hello <b>Ada</b>!"
    assert tg.state.edits == []


async def test_flood_control_slows_the_edits_down(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(slow(ANSWER * 2, 7.0))
    tg.fail("editMessageText", 429, "Too Many Requests: retry after 1", retry_after=1)
    await tg.user_says(OWNER, "tell me about tides")
    await until(lambda: tg.state.edits and "▍" not in tg.state.edits[-1]["text"], within=20)
    times = [e["edited_at"] for e in tg.state.edits[:-1]]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # after the refused edit was waited out, the interval doubled for the rest of the turn
    assert gaps and min(gaps) >= 1.8, gaps
    assert tg.state.edits[-1]["text"] == to_html((ANSWER * 2).strip())


async def test_tool_progress_shows_in_the_message_and_the_answer_replaces_it(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(
        ToolCalls([("session_search", {"query": "tides"})]),
        slow("Nothing earlier about tides.", 1.5),
    )
    await tg.user_says(OWNER, "did we talk about tides?")
    await until(lambda: tg.state.edits and "▍" not in tg.state.edits[-1]["text"], within=15)
    shown = [tg.sent[0]["first_text"]] + [e["text"] for e in tg.state.edits]
    assert any("session_search" in s for s in shown), shown
    assert tg.state.edits[-1]["text"] == "Nothing earlier about tides."
    assert len(tg.sent) == 1


async def test_an_answer_longer_than_a_message_continues_in_a_new_one(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    paragraph = "word " * 300
    long = "\n\n".join([paragraph.strip()] * 5)  # ~7,500 characters: two messages
    fake.enqueue(Text(long, chunk_chars=400, delay=0.15))
    await tg.user_says(OWNER, "write a lot")
    pieces = split_text(long)
    await until(lambda: len(tg.sent) == len(pieces) and _final(tg, pieces), within=15)
    assert [len(m["text"]) <= 4096 for m in tg.sent] == [True] * len(pieces)


def _final(tg: TelegramBotAPI, pieces: list[str]) -> bool:
    """Each message reads its piece of the final answer (the stand-in applies edits)."""
    return [m["text"] for m in tg.sent] == [to_html(p) for p in pieces]


@pytest.mark.parametrize("value", ["off", "false"])
async def test_streaming_off_sends_whole_answers(
    tg: TelegramBotAPI, fake: FakeModel, home: Path, gw_env: dict[str, str], value: str
) -> None:
    from hermes.config.settings import load_settings
    from hermes.runtime import build_runtime

    write_config(home, f"gateway:\n  streaming: {value}\n")
    settings = load_settings()
    assert settings.gateway.streaming is False
    runtime = build_runtime(settings)
    gw = runtime.services.get(Gateway)
    await gw.start()
    try:
        await until(lambda: gw.status["telegram"].connected)
        fake.enqueue(slow(ANSWER, 2.0))
        await tg.user_says(OWNER, "why are there tides?")
        await tg.wait_for_sent(1, within=10)
        assert tg.sent[0]["text"] == to_html(ANSWER.strip())
        assert tg.state.edits == []
    finally:
        await gw.stop()
        await runtime.aclose()
