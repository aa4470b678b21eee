"""Wiring: settings → store → model client → toolset → agent. Shared by every entry point."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hermes.agent.history import CompressingHistory
from hermes.agent.loop import Agent
from hermes.config.settings import Settings
from hermes.memory.review import flush as memory_flush
from hermes.memory.review import review_hook
from hermes.memory.snapshot import notes_block
from hermes.models.client import OpenAICompatClient
from hermes.store.sqlite import SQLiteStore
from hermes.tools.catalog import default_toolset


@dataclass
class Runtime:
    settings: Settings
    store: SQLiteStore
    model: OpenAICompatClient
    agent: Agent
    extras: dict[str, Any] = field(default_factory=dict)

    async def aclose(self) -> None:
        """Close in reverse order of opening: background work, model client, store."""
        await self.agent.drain()
        await self.model.aclose()
        self.store.close()


def open_store(settings: Settings) -> SQLiteStore:
    return SQLiteStore(settings.home / "state.db")


def make_model_client(settings: Settings, *, model: str | None = None) -> OpenAICompatClient:
    api_key = settings.model.api_key.get_secret_value() if settings.model.api_key else None
    return OpenAICompatClient(
        base_url=settings.model.base_url,
        api_key=api_key,
        model=model or settings.model.name,
        timeout=settings.model.timeout,
        max_retries=settings.model.max_retries,
    )


def build_runtime(settings: Settings) -> Runtime:
    """Open everything an entry point needs; call `aclose()` when done."""
    store = open_store(settings)
    model = make_model_client(settings)
    services: dict[str, Any] = {"settings": settings, "store": store}
    policy = CompressingHistory(settings=settings, store=store, model=model)
    agent = Agent(
        settings=settings,
        store=store,
        model=model,
        toolset=default_toolset(settings),
        policy=policy,
        prompt_blocks=[notes_block(settings)],
        after_turn=[review_hook(settings)],
        services=services,
    )

    async def flush_before_compression(
        scope: str, session_id: str, messages: list[dict[str, Any]]
    ) -> None:
        await memory_flush(agent, scope, session_id, messages)

    policy.flush = flush_before_compression
    return Runtime(settings=settings, store=store, model=model, agent=agent)
