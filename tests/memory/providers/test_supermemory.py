"""Supermemory through its official SDK (`supermemory`), its real HTTP client driven against a
loopback stand-in of the namespace API (supermemory_api.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
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
    record_connections,
    serving,
    settle,
    timed_turn,
    turns_on_garbage,
    turns_while_hanging,
)
from tests.memory.providers.supermemory_api import KEY, SupermemoryAPI


@pytest.fixture
async def supermemory(
    home: Path, model_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[SupermemoryAPI]:
    async with serving(SupermemoryAPI(), "supermemory", KEY, home, monkeypatch) as api:
        yield api


async def test_alice_facts_reach_her_next_session_and_never_bob(
    supermemory: SupermemoryAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    alice, bob = await alice_then_bob(
        fake,
        provider_runtime(),
        "my sister is called Ines",
        "what is my sister called?",
        "my sister?",
    )
    assert len(alice) == 1 and "my sister is called Ines" in alice[0]
    assert all("Ines" not in block for block in bob), bob
    assert set(supermemory.documents) == {"hermes-user-alice", "hermes-user-bob"}


async def test_a_hanging_supermemory_adds_nothing_to_a_turn(
    supermemory: SupermemoryAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    supermemory.mode = "hang"
    health = await turns_while_hanging(supermemory, fake, provider_runtime(), 60)
    assert health["failed"] >= 1, health


async def test_garbage_from_supermemory_breaks_nothing(
    supermemory: SupermemoryAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    supermemory.mode = "garbage"
    runtime = provider_runtime()
    await turns_on_garbage(fake, runtime)
    assert (await provider_health(runtime))["status"] == "degraded"


async def test_forget_deletes_the_users_namespace_only(
    supermemory: SupermemoryAPI, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.default = Text("ok")
    await timed_turn(runtime, "I live in Lyon", scope="user:alice", session="1")
    await timed_turn(runtime, "I live in Oslo", scope="user:bob", session="1")
    await settle(runtime)

    removed = await asyncio.to_thread(forget_provider_memory, runtime.settings, "user:alice")

    assert removed == 2  # one document, one memory
    assert set(supermemory.documents) == {"hermes-user-bob"}
    assert await provider_of(runtime).search("user:bob", "Oslo", 5) == [
        "The user said: I live in Oslo"
    ]
    assert await asyncio.to_thread(forget_provider_memory, runtime.settings, "user:alice") == 0


async def test_only_loopback_is_dialled(
    supermemory: SupermemoryAPI,
    fake: FakeModel,
    provider_runtime: Callable[[], Runtime],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK reaches the configured Supermemory and nothing else (no telemetry): every call
    it makes, from setup to forgetting, dials loopback only."""
    dialled = record_connections(monkeypatch)
    runtime = provider_runtime()
    fake.default = Text("ok")
    await timed_turn(runtime, "I like tea", scope="user:alice", session="t")
    await settle(runtime)
    assert await provider_of(runtime).search("user:alice", "tea", 3)
    assert await asyncio.to_thread(forget_provider_memory, runtime.settings, "user:alice") >= 1
    await runtime.aclose()

    assert supermemory.documents == {} and hosts(dialled) == {"127.0.0.1"}, dialled
