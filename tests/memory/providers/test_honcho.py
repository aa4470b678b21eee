"""Honcho through its official SDK (`honcho-ai`), its real HTTP client driven against a
loopback stand-in of the v3 API (honcho_api.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.memory.providers import provider_health
from hermes.memory.providers.forget import forget_provider_memory
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Text
from tests.memory.providers.conftest import (
    alice_then_bob,
    hosts,
    provider_of,
    recalled_blocks,
    record_connections,
    settle,
    timed_turn,
    turns_on_garbage,
    turns_while_hanging,
    write_config,
)
from tests.memory.providers.honcho_api import HonchoAPI


async def test_alice_facts_reach_her_next_session_and_never_bob(
    honcho: HonchoAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    alice, bob = await alice_then_bob(
        fake,
        provider_runtime(),
        "I play the cello on Sundays",
        "When do I play the cello?",
        "And what about cello?",
    )
    assert len(alice) == 1 and "I play the cello on Sundays" in alice[0]
    assert "honcho" in alice[0]
    assert all("Sundays" not in block for block in bob), bob
    # each scope is its own peer, each Hermes session a session of that peer only
    assert {"user-alice", "user-bob"} <= set(honcho.peers)
    assert {s["peers"].__len__() for s in honcho.sessions.values()} == {2}
    assert "user-alice--a-1" in honcho.sessions
    assert honcho.sessions["user-bob--b-1"]["peers"] == {"user-bob", "hermes"}


async def test_the_owner_is_its_own_peer(
    honcho: HonchoAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.default = Text("ok")
    await timed_turn(runtime, "hello", scope="default", session="o")
    await settle(runtime)
    assert "owner--o" in honcho.sessions


async def test_a_hanging_honcho_adds_nothing_to_a_turn(
    honcho: HonchoAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    honcho.mode = "hang"
    health = await turns_while_hanging(honcho, fake, provider_runtime(), 30)
    assert health["status"] == "degraded" and health["failed"] >= 1, health


async def test_garbage_from_honcho_breaks_nothing(
    honcho: HonchoAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    honcho.mode = "garbage"
    runtime = provider_runtime()
    await turns_on_garbage(fake, runtime)
    assert all(not recalled_blocks(b) for b in fake.chat_requests())
    assert (await provider_health(runtime))["status"] == "degraded"


async def test_forget_deletes_the_users_sessions_and_conclusions_only(
    honcho: HonchoAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.default = Text("ok")
    await timed_turn(runtime, "I live in Lyon", scope="user:alice", session="1")
    await timed_turn(runtime, "I moved again", scope="user:alice", session="2")
    await timed_turn(runtime, "I live in Oslo", scope="user:bob", session="1")
    await settle(runtime)

    removed = await asyncio.to_thread(forget_provider_memory, runtime.settings, "user:alice")

    assert removed == 2 + 2  # two sessions, two conclusions about alice
    assert set(honcho.sessions) == {"user-bob--1"}
    assert {c["observed_id"] for c in honcho.conclusions} == {"user-bob", "hermes"}
    assert await provider_of(runtime).search("user:bob", "Oslo", 5) == ["I live in Oslo"]
    assert await provider_of(runtime).search("user:alice", "Lyon", 5) == []


async def test_honcho_search_is_offered_by_toolset(
    honcho: HonchoAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    agent = runtime.agent
    assert "honcho_search" in agent.toolset_for("alice", "api").names()  # end user: own peer
    assert "honcho_search" in agent.toolset_for("default", "cli").names()
    for surface in ("cron", "delegate"):  # not conversations with the user: no provider tools
        for scope in ("default", "user:alice"):
            assert "honcho_search" not in agent.toolset_for(scope, surface).names()
    assert "session_search" in agent.toolset_for("user:alice", "cron").names()
    write_config(
        runtime.settings.home,
        {"provider": "honcho"},
        tools={"end_user_toolsets": ["session_search"]},
    )
    narrowed = provider_runtime().agent
    assert "honcho_search" not in narrowed.toolset_for("alice", "api").names()


async def test_missing_key_is_a_sentence_and_turns_go_on(
    home: Path,
    model_env: dict[str, str],
    fake: FakeModel,
    provider_runtime: Callable[[], Runtime],
) -> None:
    write_config(home, {"provider": "honcho"})
    runtime = provider_runtime()
    fake.default = Text("still here")
    result, _ = await timed_turn(runtime, "hi", scope="user:alice", session="m")
    await settle(runtime)
    assert result.content == "still here"
    health = await provider_health(runtime)
    assert health["status"] == "error"
    assert "HONCHO_API_KEY" in health["detail"]


async def test_work_beyond_the_queue_is_dropped_counted_and_logged(
    home: Path,
    honcho: HonchoAPI,
    fake: FakeModel,
    provider_runtime: Callable[[], Runtime],
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_config(
        home,
        {"provider": "honcho", "review_interval": 0, "provider_timeout": 2, "provider_queue": 2},
    )
    honcho.mode = "hang"
    health = await turns_while_hanging(honcho, fake, provider_runtime(), 30)
    # 4 turns queue 8 calls (a sync and a prefetch each) behind a hanging one: 2 fit
    assert health["dropped"] >= 4, health
    assert health["status"] == "degraded"
    assert any("2 calls are already waiting" in r.getMessage() for r in caplog.records)


async def test_secrets_are_redacted_before_they_reach_honcho(
    honcho: HonchoAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.default = Text("ok")
    secret = "sk-proj-abcdefghijklmnopqrstuvwx1234"
    await timed_turn(runtime, f"my key is {secret}", scope="user:alice", session="k")
    await settle(runtime)
    sent = [m["content"] for m in honcho.messages]
    assert sent and all(secret not in text for text in sent)
    assert any("[REDACTED]" in text for text in sent)
    assert all(secret not in str(request) for request in honcho.requests)


async def test_only_loopback_is_dialled(
    honcho: HonchoAPI,
    fake: FakeModel,
    provider_runtime: Callable[[], Runtime],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK reaches the configured Honcho and nothing else (no telemetry, no version
    check): every call it makes, from setup to forgetting, dials loopback only."""
    dialled = record_connections(monkeypatch)
    runtime = provider_runtime()
    fake.default = Text("ok")
    await timed_turn(runtime, "I like tea", scope="user:alice", session="t")
    await settle(runtime)
    assert await provider_of(runtime).search("user:alice", "tea", 3) == ["I like tea"]
    assert await asyncio.to_thread(forget_provider_memory, runtime.settings, "user:alice") >= 1
    await runtime.aclose()

    assert len(honcho.requests) >= 4 and hosts(dialled) == {"127.0.0.1"}, dialled
