"""The composition root: settings → parts → store → model client → agent. Every entry point
(CLI, server, cron, gateway) builds its runtime here and nowhere else. The model client comes
from the provider `model.provider` names (`openai` built in; plugins add others), so the
runtime knows the `ModelClient` contract only."""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hermes.config.settings import Settings
from hermes.store.base import Store
from hermes.store.opener import open_store as _open_url

if TYPE_CHECKING:  # loaded by the functions that need them: a command that only opens
    # the store (`hermes sessions list`) starts sooner without the agent or the plugin
    # registry (its dataclasses and the built-in parts' list)
    from hermes.agent.loop import Agent
    from hermes.models.client import ModelClient
    from hermes.plugins import Daemon, Registry
    from hermes.services import Services
    from hermes.tools.registry import Toolset

log = logging.getLogger(__name__)

__all__ = [
    "Runtime",
    "build_runtime",
    "make_model_client",
    "open_store",
    "probe_model_client",
    "with_fallbacks",
]


@dataclass
class Runtime:
    settings: Settings
    store: Store
    model: ModelClient
    agent: Agent
    registry: Registry
    components: list[object] = field(default_factory=list)

    @property
    def services(self) -> Services:
        """The typed services every tool and part sees (the agent's)."""
        return self.agent.services

    def daemons(self) -> list[Daemon]:
        """The parts' `hermes serve` daemons that are on for these settings, in order."""
        made = (factory(self) for factory in self.registry.daemons)
        return [daemon for daemon in made if daemon is not None]

    async def aclose(self) -> None:
        """Close in reverse order of opening: background work, the parts' components (those
        with an `aclose`, e.g. background processes), model client, store."""
        await self.agent.drain()
        for component in reversed(self.components):
            close = getattr(component, "aclose", None)
            if close is None:
                continue
            try:
                result = close()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("closing %s failed", type(component).__name__)
        await self.model.aclose()
        self.store.close()


def open_store(settings: Settings) -> Store:
    """The store `store.url` names (default: SQLite at `$HERMES_HOME/state.db`)."""
    return _open_url(settings.database_url, home=settings.home, pool_size=settings.store.pool_size)


def make_model_client(
    settings: Settings, *, model: str | None = None, registry: Registry | None = None
) -> ModelClient:
    """The client of the provider `model.provider` names (ConfigError if none is registered)."""
    from hermes.plugins import load_registry

    return (registry or load_registry(settings)).model_client(settings, model)


def probe_model_client(settings: Settings) -> ModelClient:
    """A client for a check (`hermes doctor`, `hermes setup`): one retry, not the full
    back-off."""
    quick = settings.model.model_copy(update={"max_retries": min(settings.model.max_retries, 1)})
    return make_model_client(settings.model_copy(update={"model": quick}))


def with_fallbacks(settings: Settings, primary: ModelClient) -> ModelClient:
    """The agent's model: `primary`, with `model.fallbacks` behind it when set."""
    if not settings.model.fallbacks:
        return primary
    from hermes.models.client import OpenAICompatClient
    from hermes.models.fallback import Candidate, Cooldowns, FallbackClient

    main = settings.model
    chain = [Candidate(primary, f"{main.base_url} {main.name}", main.context_length)]
    for entry in main.fallbacks:
        base_url = entry.base_url or main.base_url
        key = entry.api_key or (main.api_key if base_url == main.base_url else None)
        client = OpenAICompatClient(
            base_url=base_url,
            api_key=key.get_secret_value() if key else None,
            model=entry.name,
            timeout=main.timeout,
            max_retries=main.max_retries,
            total_timeout=main.total_timeout,
        )
        chain.append(Candidate(client, f"{base_url} {entry.name}", entry.context_length))
    cooldowns = Cooldowns(settings.home / "model_cooldowns.json")
    return FallbackClient(chain, cooldowns, main.fallback_cooldown)


def _toolset(settings: Settings, registry: Registry, agent_tools: Toolset) -> Toolset:
    toolset = agent_tools.plus(entry.tool for entry in registry.enabled_tools(settings))
    if settings.agent.toolsets is not None:
        toolset = toolset.only(settings.agent.toolsets)
    return toolset


def build_runtime(settings: Settings, *, registry: Registry | None = None) -> Runtime:
    """Open everything an entry point needs; call `aclose()` when done."""
    from hermes.agent.history import CompressingHistory
    from hermes.agent.loop import Agent
    from hermes.agent.memory_providers import MemoryLayers
    from hermes.delivery import Deliverers
    from hermes.plugins import load_registry
    from hermes.tools.registry import Toolset
    from hermes.tools.toolsets import ToolGroups

    registry = registry or load_registry(settings)
    made = (factory(settings) for factory in registry.memory_providers)
    memory = [provider for provider in made if provider is not None]
    MemoryLayers(memory)  # refuse a bad provider set before anything is opened
    # an unknown provider is refused before anything opens
    model = with_fallbacks(settings, registry.model_client(settings))
    store = open_store(settings)
    share = getattr(model, "share_state", None)
    if callable(share):  # fallback cooldowns: kept where every replica sees them
        share(store.records)
    provider_tools = Toolset(t for provider in memory for t in provider.tools())
    agent = Agent(
        settings=settings,
        store=store,
        model=model,
        toolset=_toolset(settings, registry, provider_tools),
        memory=memory,
        prompt_blocks=[factory(settings) for factory in registry.prompt_blocks],
        policy=CompressingHistory(settings=settings, store=store, model=model),
    )
    runtime = Runtime(settings=settings, store=store, model=model, agent=agent, registry=registry)
    agent.services.provide(
        ToolGroups({entry.tool.name: entry.group for entry in registry.enabled_tools(settings)})
    )
    for make in registry.components:
        component = make(runtime)
        runtime.components.append(component)
        agent.services.provide(component)
    for make_source in registry.tool_sources:
        agent.toolset = agent.toolset.plus_source(make_source(runtime))
    agent.services.provide(Deliverers([make(runtime) for make in registry.deliverers]))
    agent.start()
    return runtime
