"""Mem0 for real: the mem0ai library, qdrant's on-disk local store under $HERMES_HOME, the
bundled MiniLM, and its fact extraction answered by the fake model with scripted JSON."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.memory.providers import provider_health
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Hang, Raw, Text
from tests.memory.providers.conftest import (
    facts,
    is_chat,
    is_extraction,
    recalled_blocks,
    settle,
    timed_turn,
    write_config,
)

pytestmark = [pytest.mark.semantic]


async def test_alice_facts_reach_her_next_session_and_never_bob(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Text(facts("Alice is allergic to peanuts")), when=is_extraction)
    fake.default = Text("Noted.")
    await timed_turn(runtime, "I am allergic to peanuts.", scope="alice", session="a-1")
    await settle(runtime)
    fake.enqueue(Text(facts()), when=is_extraction)
    fake.enqueue(Text(facts()), when=is_extraction)
    fake.enqueue(Text(facts()), when=is_extraction)

    await timed_turn(runtime, "Any snack ideas with peanuts?", scope="alice", session="a-2")
    await timed_turn(runtime, "Any snack ideas with peanuts?", scope="bob", session="b-1")
    await settle(runtime)
    await timed_turn(runtime, "And for dinner, peanuts?", scope="bob", session="b-2")
    await settle(runtime)

    chats = [b for b in fake.chat_requests() if is_chat(b)]
    alice_new_session = recalled_blocks(chats[1])
    assert len(alice_new_session) == 1
    assert "allergic to peanuts" in alice_new_session[0]
    assert "NOT new user input" in alice_new_session[0]
    bob = [block for body in chats[2:] for block in recalled_blocks(body)]
    assert all("peanuts" not in block.split("\n\n", 1)[1] for block in bob), bob
    # the fence is a system message, never the user's turn
    assert chats[1]["messages"][-1] == {"role": "user", "content": "Any snack ideas with peanuts?"}


async def test_a_hanging_provider_adds_nothing_to_a_turn(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    write_config(mem0_home, {"provider": "mem0", "review_interval": 0, "provider_timeout": 1})
    runtime = provider_runtime()
    fake.enqueue(Hang(30), Hang(30), Hang(30), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "warm up", scope="alice", session="s")  # first turn loads the SDK
    durations = []
    for n in range(3):
        _, took = await timed_turn(runtime, f"message {n}", scope="alice", session="s")
        durations.append(took)
    assert max(durations) < 0.5, durations
    health = await provider_health(runtime)
    assert health["provider"] == "mem0"
    fake.stop()  # ends the hangs; the provider's calls fail and are reported, not raised
    await settle(runtime)
    health = await provider_health(runtime)
    assert health["failed"] >= 1 and health["status"] == "degraded", health


async def test_garbage_from_the_extraction_breaks_nothing(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Raw(200, "{not json"), Text("[1, 2"), when=is_extraction)
    fake.default = Text("fine")
    first, _ = await timed_turn(runtime, "hello", scope="alice", session="g")
    second, _ = await timed_turn(runtime, "again", scope="alice", session="g")
    await settle(runtime)
    assert (first.content, second.content) == ("fine", "fine")


async def test_secrets_are_redacted_before_they_reach_the_provider(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Text(facts()), when=is_extraction)
    fake.default = Text("ok")
    secret = "sk-proj-abcdefghijklmnopqrstuvwx1234"
    await timed_turn(runtime, f"my key is {secret}", scope="alice", session="k")
    await settle(runtime)
    extraction = next(b for b in fake.chat_requests() if is_extraction(b))
    text = str(extraction["messages"])
    assert secret not in text and "[REDACTED]" in text
