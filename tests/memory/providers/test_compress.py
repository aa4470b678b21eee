"""`on_pre_compress`: when a long session is compressed, what the external provider last
recalled about the user goes into the summary prompt as background (the user's scope only),
and a provider with nothing recalled adds nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes.agent.compression import SUMMARIZER_INSTRUCTIONS
from hermes.plugins import load_registry
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text
from tests.memory.providers import notebook_provider
from tests.memory.providers.conftest import make_settings, settle, timed_turn, write_config

FILLER = "lorem ipsum dolor sit amet " * 12  # ~80 tokens


def is_summary(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == SUMMARIZER_INSTRUCTIONS


def reply(body: dict[str, Any]) -> Text:
    return Text("## Goal\nSUMMARY" if is_summary(body) else "answer " + FILLER)


async def test_the_providers_view_of_the_user_reaches_the_summary_prompt(
    home: Path, model_env: dict[str, str], fake: FakeModel
) -> None:
    write_config(home, {"review_interval": 0}, agent={"toolsets": []})
    registry = load_registry(plugins=False)
    notebook_provider.register(registry)
    settings = make_settings()
    settings.model.context_length = 2000  # compression from ~1000 tokens
    runtime = build_runtime(settings, registry=registry)
    fake.default = reply
    try:
        await timed_turn(runtime, "I keep bees on the roof", scope="user:bob", session="b")
        await timed_turn(runtime, "I play the oboe", scope="user:alice", session="long")
        await settle(runtime)
        for n in range(14):
            await timed_turn(runtime, f"turn {n}", scope="user:alice", session="long")
            await settle(runtime)
            if any(is_summary(b) for b in fake.chat_requests()):
                break
    finally:
        await runtime.aclose()

    summaries = [b for b in fake.chat_requests() if is_summary(b)]
    assert summaries, "the session was never compressed"
    prompt = summaries[0]["messages"][-1]["content"]
    assert "BACKGROUND (recalled memory about this user" in prompt
    assert "What notebook remembers about this user:" in prompt
    assert "- I play the oboe" in prompt
    assert "bees" not in prompt  # bob's, not alice's
