"""The recalled-memory block is the model's to read, never the user's to see: when the model
echoes it, the streamed answer (however the tags are split across deltas) and the stored one
leave it out, while the text around it goes through unchanged."""

from __future__ import annotations

import pytest

from hermes.agent.memory_providers import FENCE_CLOSE, FENCE_OPEN, FenceScrubber, fence
from hermes.testing.fake_model import FakeModel, Text
from tests.memory.providers.conftest import make_settings, recalled_blocks, settle
from tests.memory.providers.honcho_api import HonchoAPI
from tests.server.conftest import chat_body, chunks, open_api

ECHO = f"Sure. {fence('honcho', 'I play the cello on Sundays')} You play on Sundays."
SHOWN = "Sure.  You play on Sundays."


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 16, 17, 1000])
def test_the_scrubber_drops_a_block_split_anywhere(size: int) -> None:
    scrubber = FenceScrubber()
    pieces = [ECHO[i : i + size] for i in range(0, len(ECHO), size)]
    out = "".join(scrubber.feed(p) for p in pieces) + scrubber.flush()
    assert out == SHOWN


def test_text_that_only_looks_like_a_tag_start_is_kept() -> None:
    scrubber = FenceScrubber()
    out = scrubber.feed("a < b and <memory") + scrubber.feed(" is fine") + scrubber.flush()
    assert out == "a < b and <memory is fine"
    assert FENCE_OPEN in ECHO and FENCE_CLOSE in ECHO


async def test_an_echoed_recall_is_neither_streamed_nor_stored(
    honcho: HonchoAPI, fake: FakeModel
) -> None:
    fake.enqueue(Text("Noted."), Text(ECHO, chunk_chars=5))
    async with open_api(make_settings()) as api:
        said = await api.client.post(
            "/v1/chat/completions",
            json=chat_body("I play the cello on Sundays"),
            headers={"X-Hermes-Session-Id": "one"},
        )
        assert said.status_code == 200, said.text
        await settle(api.runtime)

        streamed = await api.client.post(
            "/v1/chat/completions",
            json=chat_body("When do I play?", stream=True),
            headers={"X-Hermes-Session-Id": "two"},
        )
        assert streamed.status_code == 200, streamed.text
        await settle(api.runtime)

        asked = fake.chat_requests()[-1]
        assert any("cello on Sundays" in b for b in recalled_blocks(asked))  # it was recalled
        text = "".join(
            c["choices"][0]["delta"].get("content") or ""
            for c in chunks(streamed.text)
            if c.get("choices")
        )
        assert text == SHOWN
        stored = api.runtime.store.get_messages("default", "two")
        assert [m.content for m in stored if m.role == "assistant"] == [SHOWN]
