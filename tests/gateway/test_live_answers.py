"""Live answers through the Telegram stand-in: one message per turn, edited as the answer
streams, at most once per edit interval, slower after flood control, finished with the final
text. The streaming tests run the gateway at a tenth of the platforms' pace (`LiveTiming`), with
every delay and bound expressed in that interval, so they check the same behaviour without
sleeping through real seconds; the defaults themselves are checked without waiting."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hermes.gateway.live import FIRST_AFTER, MAX_INTERVAL, LiveTiming
from hermes.gateway.platforms.slack import SlackAdapter
from hermes.gateway.platforms.telegram import TelegramAdapter
from hermes.gateway.platforms.telegram_format import split_text, to_html
from hermes.gateway.runner import Gateway
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, until, write_config

ANSWER = "The **tide** rises twice a day, pulled by the moon and, less so, by the sun. " * 3
PACE = LiveTiming(scale=0.1)
"""A tenth of the real pace: Telegram's 1 s edit interval becomes 0.1 s."""


def slow(text: str, seconds: float) -> Text:
    """`text` streamed over about `seconds`, in 8-character chunks."""
    chunks = max(len(text) // 8, 1)
    return Text(text, chunk_chars=8, delay=seconds / chunks)


def quicken(gateway: Gateway, pace: LiveTiming = PACE) -> float:
    """Run the gateway's live answers at `pace`; the Telegram edit interval it gives."""
    gateway.live_timing = pace
    return pace.interval(gateway.adapters["telegram"])


LATE = 0.1
"""Seconds by which the stand-in may note a request late on a loaded machine (the absolute
slack the tests had at the real pace, 0.9 s for a 1 s interval). It shortens one gap and
lengthens the next, so it is allowed once per span, not once per edit."""


def too_soon(times: list[float], interval: float) -> list[tuple[int, float]]:
    """Spans of edits that came sooner than one per `interval` (with 10% and `LATE` slack):
    (edits in the span, seconds it took). Empty when the edits kept the pace."""
    return [
        (k - j, times[k] - times[j])
        for j in range(len(times))
        for k in range(j + 1, len(times))
        if times[k] - times[j] < (k - j) * 0.9 * interval - LATE
    ]


def test_the_default_pace_is_the_platforms_own(gateway: Gateway) -> None:
    """What the scaled tests run at a tenth of: 0.8 s before the first text, each platform's
    edit interval (Telegram 1 s, Slack 1.2 s), at most 8 s after repeated flood control."""
    timing = gateway.live_timing
    assert timing == LiveTiming()
    assert timing.first_after == FIRST_AFTER == 0.8
    assert timing.max_interval == MAX_INTERVAL == 8.0
    assert timing.interval(gateway.adapters["telegram"]) == TelegramAdapter.edit_interval == 1.0
    assert SlackAdapter.edit_interval == 1.2
    assert PACE.first_after == pytest.approx(0.08)
    assert PACE.interval(gateway.adapters["telegram"]) == pytest.approx(0.1)


async def test_a_slow_answer_is_one_message_edited_as_it_streams(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    interval = quicken(gateway)
    fake.enqueue(slow(ANSWER, 8 * interval))
    asked = time.perf_counter()
    await tg.user_says(OWNER, "why are there tides?")
    await until(lambda: tg.state.edits and "▍" not in tg.state.edits[-1]["text"], within=15)

    assert len(tg.sent) == 1, "the answer is one message, not one per chunk"
    first = tg.sent[0]
    # the first text waits the delay that lets quick answers go out whole, and shows before
    # the answer is done
    assert first["sent_at"] - asked >= PACE.first_after
    assert first["sent_at"] < tg.state.edits[-1]["edited_at"]
    assert len(first["first_text"]) < len(to_html(ANSWER.strip()))
    assert first["text"] == to_html(ANSWER.strip()), "the chat shows the whole answer"
    # the last edit is exactly what a whole (non-streamed) answer would have been
    assert tg.state.edits[-1]["text"] == to_html(ANSWER.strip())
    assert tg.state.edits[-1]["parse_mode"] == "HTML"
    assert all(int(e["message_id"]) == first["message_id"] for e in tg.state.edits)
    # one edit per interval: no run of intermediate edits came faster than the interval
    # allows, so the ~30 chunks were coalesced into about as many edits as the stream lasted
    # intervals
    times = [first["sent_at"]] + [e["edited_at"] for e in tg.state.edits[:-1]]
    assert len(times) >= 3 and not too_soon(times, interval), (interval, too_soon(times, interval))
    lasted = tg.state.edits[-1]["edited_at"] - first["sent_at"]
    assert len(tg.state.edits) <= (lasted + LATE) / (0.9 * interval) + 2, (lasted, interval)


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
    # a fifth of the pace (not a tenth): Telegram's retry_after is whole seconds, and the
    # doubled interval must stand out from an edit merely slowed by a loaded machine
    interval = quicken(gateway, LiveTiming(scale=0.2))
    fake.enqueue(slow(ANSWER * 2, 1.0 + 10 * interval))
    tg.fail("editMessageText", 429, "Too Many Requests: retry after 1", retry_after=1)
    await tg.user_says(OWNER, "tell me about tides")
    await until(lambda: tg.state.edits and "▍" not in tg.state.edits[-1]["text"], within=20)
    times = [e["edited_at"] for e in tg.state.edits[:-1]]
    # after the refused edit was waited out (1 s), the interval doubled for the rest of the turn
    slower = 2 * interval
    assert len(times) >= 3 and not too_soon(times, slower), (slower, too_soon(times, slower))
    assert tg.state.edits[-1]["text"] == to_html((ANSWER * 2).strip())


async def test_tool_progress_shows_in_the_message_and_the_answer_replaces_it(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    interval = quicken(gateway)
    fake.enqueue(
        ToolCalls([("session_search", {"query": "tides"})]),
        slow("Nothing earlier about tides.", 8 * interval),
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
    interval = quicken(gateway)
    paragraph = "word " * 300
    long = "\n\n".join([paragraph.strip()] * 5)  # ~7,500 characters: two messages
    fake.enqueue(Text(long, chunk_chars=400, delay=0.5 * interval))  # ~19 chunks
    await tg.user_says(OWNER, "write a lot")
    pieces = split_text(long)
    await until(lambda: len(tg.sent) == len(pieces) and _final(tg, pieces), within=15)
    assert [len(m["text"]) <= 4096 for m in tg.sent] == [True] * len(pieces)
    # shown live (not sent whole at the end): the first message grew by edits
    assert tg.state.edits and len(tg.sent[0]["first_text"]) < len(tg.sent[0]["text"])


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
        # slow enough that a live answer, were it on, would show many intervals before the end
        interval = quicken(gw)
        fake.enqueue(slow(ANSWER, 8 * interval))
        await tg.user_says(OWNER, "why are there tides?")
        await tg.wait_for_sent(1, within=10)
        assert tg.sent[0]["text"] == to_html(ANSWER.strip())
        assert tg.state.edits == []
    finally:
        await gw.stop()
        await runtime.aclose()
