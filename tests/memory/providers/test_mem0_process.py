"""Mem0's engine in its own worker process: what the server sees when that process cannot
start, dies in the middle of a call, or is stopped cleanly."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.memory.providers import provider_health
from hermes.memory.providers.forget import forget_provider_memory
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Hang, Text, ToolCalls
from tests.memory.providers.conftest import (
    facts,
    is_extraction,
    make_settings,
    provider_of,
    settle,
    timed_turn,
    write_config,
)
from tests.server.conftest import chat_body, open_api, wait_until

pytestmark = [pytest.mark.semantic]


def extractions(fake: FakeModel) -> int:
    return sum(1 for body in fake.chat_requests() if is_extraction(body))


async def test_the_engine_runs_in_another_process(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.default = Text("ok")
    await timed_turn(runtime, "hello", scope="alice", session="p")
    await settle(runtime)
    process = (await provider_health(runtime))["process"]
    assert process["pid"] not in (None, os.getpid())
    os.kill(process["pid"], 0)  # alive
    await runtime.aclose()
    with pytest.raises(ProcessLookupError):  # a clean stop ends it (reaped by close)
        os.kill(process["pid"], 0)


async def test_a_worker_that_dies_mid_call_is_restarted_and_the_call_counted_dropped(
    mem0_home: Path,
    fake: FakeModel,
    provider_runtime: Callable[[], Runtime],
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Text(facts("Alice likes tea")), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "I like tea", scope="alice", session="c")
    await settle(runtime)
    before = await provider_health(runtime)
    assert before["dropped"] == 0
    fake.enqueue(Hang(60), when=is_extraction)
    fake.enqueue(Text(facts("Alice plays the cello")), when=is_extraction)

    await timed_turn(runtime, "I moved to Lyon", scope="alice", session="c")
    await wait_until(lambda: extractions(fake) == 2, what="the hanging extraction", within=30)
    caplog.set_level(logging.WARNING, logger="hermes.memory.providers")
    os.kill(before["process"]["pid"], signal.SIGKILL)
    await settle(runtime)

    health = await provider_health(runtime)
    assert health["dropped"] == 1, health  # the turn in flight, not retried blindly
    assert health["process"]["restarts"] == 1 and health["process"]["crashes"] == 1
    assert health["process"]["pid"] not in (None, before["process"]["pid"])
    assert any("dropped sync_turn" in r.getMessage() for r in caplog.records)
    # the restarted worker keeps what was stored before the crash, and takes new turns
    _, took = await timed_turn(runtime, "I play the cello", scope="alice", session="c")
    await settle(runtime)
    found = await provider_of(runtime).search("alice", "what does alice like", 5)
    assert set(found) == {"Alice likes tea", "Alice plays the cello"}


async def test_a_worker_that_cannot_start_is_reported_and_turns_go_on(
    mem0_home: Path, fake: FakeModel
) -> None:
    write_config(
        mem0_home, {"provider": "mem0", "review_interval": 0, "mem0": {"embedder": "endpoint"}}
    )
    fake.default = Text("still here")
    async with open_api(make_settings()) as api:
        r = await api.client.post("/v1/chat/completions", json=chat_body("hi"))
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == (
            "still here"
        )
        await settle(api.runtime)
        health = (await api.client.get("/health/detailed")).json()
    part = health["parts"]["memory_provider"]
    assert health["status"] == "degraded" and "memory_provider" in health["degraded"]
    assert part["provider"] == "mem0" and part["status"] == "error"
    assert "memory.mem0.embedding_model is not set" in part["detail"]


async def test_a_clean_stop_drains_what_is_queued(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.default = Text("ok")
    await timed_turn(runtime, "hello", scope="alice", session="d")  # starts the worker
    await settle(runtime)
    fake.enqueue(Text(facts("Alice lives in Oslo")), when=is_extraction)

    await timed_turn(runtime, "I live in Oslo", scope="alice", session="d")
    await runtime.aclose()  # no settle: the stop itself waits for the queued turn

    assert (await provider_health(runtime))["dropped"] == 0
    removed = await asyncio.to_thread(forget_provider_memory, make_settings(), "alice")
    assert removed == 1


async def test_the_mem0_search_tool_is_answered_by_the_worker(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Text(facts("Alice grows tomatoes")), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "I grow tomatoes", scope="alice", session="t")
    await settle(runtime)
    fake.enqueue(ToolCalls([("mem0_search", {"query": "what does alice grow"})]), Text("Tomatoes."))

    result, _ = await timed_turn(runtime, "what do I grow?", scope="alice", session="t2")

    assert result.content == "Tomatoes."
    tool_results = [m for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 1 and "Alice grows tomatoes" in tool_results[0]["content"]
