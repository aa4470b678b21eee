"""A third party's memory provider through the plugin registry (README's example): the same
worker, recall, fencing, tool, health and forgetting as Hermes' own; and a recall slower than
`memory.provider_timeout` skipped for its turn and reported."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from hermes.agent.turn import TurnRequest
from hermes.memory.providers import provider_health
from hermes.memory.providers.forget import forget_provider_memory
from hermes.plugins import load_registry
from hermes.runtime import Runtime, build_runtime
from hermes.server.app import create_app
from hermes.testing.fake_model import FakeModel, Text
from tests.memory.providers import notebook_provider
from tests.memory.providers.conftest import (
    make_settings,
    provider_of,
    recalled_blocks,
    settle,
    timed_turn,
    write_config,
)


@pytest.fixture
async def notebook(home: Path, model_env: dict[str, str]) -> AsyncIterator[Runtime]:
    write_config(home, {"review_interval": 0, "provider_timeout": 1})
    registry = load_registry(plugins=False)
    notebook_provider.register(registry)  # what loading the plugin's entry point does
    runtime = build_runtime(make_settings(), registry=registry)
    try:
        yield runtime
    finally:
        await runtime.aclose()


async def test_a_plugins_provider_works_like_a_built_in_one(
    notebook: Runtime, fake: FakeModel
) -> None:
    fake.default = Text("Noted.")
    await timed_turn(notebook, "I keep bees", scope="alice", session="a-1")
    await settle(notebook)
    await timed_turn(notebook, "what do I keep?", scope="alice", session="a-2")
    await timed_turn(notebook, "what do I keep?", scope="bob", session="b-1")
    await settle(notebook)

    alice, bob = (recalled_blocks(body) for body in fake.chat_requests()[1:3])
    assert len(alice) == 1 and "I keep bees" in alice[0] and "notebook" in alice[0]
    assert all("bees" not in block for block in bob)
    assert "notebook_search" in notebook.agent.toolset_for("alice", "api").names()
    assert (await provider_health(notebook))["provider"] == "notebook"
    removed = await asyncio.to_thread(forget_provider_memory, notebook.settings, "alice")
    assert removed == 2  # "I keep bees", "what do I keep?"
    assert await provider_of(notebook).search("alice", "bees", 5) == []


async def test_a_slow_recall_is_skipped_for_its_turn_and_reported(
    notebook: Runtime, fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.default = Text("ok")
    await timed_turn(notebook, "I keep bees", scope="alice", session="s")
    await settle(notebook)
    monkeypatch.setattr(notebook_provider, "DELAY", 1.5)  # over provider_timeout (1 s)
    await timed_turn(notebook, "and wasps", scope="alice", session="s")
    await settle(notebook)  # the slow recall finished, late

    _, took = await timed_turn(notebook, "what do I keep?", scope="alice", session="s")
    await settle(notebook)

    assert took < 0.5
    health = await provider_health(notebook)
    assert health["slow_recalls_skipped"] >= 1 and health["status"] == "degraded"
    assert "over memory.provider_timeout" in health["detail"]
    last = recalled_blocks(fake.chat_requests()[-1])
    assert all("wasps" not in block for block in last)  # the late recall was not used


async def test_a_cron_run_neither_reads_nor_warms_the_recall(
    notebook: Runtime, fake: FakeModel
) -> None:
    """A scheduled run is no conversation with the user: it gets no recalled block, and its
    prompt does not become the query of the user's next recall."""
    fake.default = Text("ok")
    notebook_provider.QUERIES.clear()
    await timed_turn(notebook, "I keep bees", scope="alice", session="a-1")
    await settle(notebook)
    await notebook.agent.run_turn(
        TurnRequest(user_message="Summarise the stock market news", scope="alice", source="cron")
    )
    await settle(notebook)
    assert recalled_blocks(fake.chat_requests()[-1]) == []
    await timed_turn(notebook, "what do I keep?", scope="alice", session="a-2")
    [block] = recalled_blocks(fake.chat_requests()[-1])
    assert "I keep bees" in block
    assert all("stock market" not in call for call in notebook_provider.QUERIES)


async def test_health_names_the_provider_to_the_owner_only(notebook: Runtime) -> None:
    key = "health-owner-key-0123456789"

    async def health(headers: dict[str, str]) -> dict[str, object]:
        app = create_app(notebook, close_runtime=False)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return (await client.get("/health", headers=headers)).json()

    assert (await health({}))["memory_provider"] == {"name": "notebook", "status": "ok"}
    notebook.settings.server.api_key = SecretStr(key)
    assert set(await health({})) == {"status", "version", "model_configured"}
    owner = await health({"Authorization": f"Bearer {key}"})
    assert owner["memory_provider"] == {"name": "notebook", "status": "ok"}
