"""One way to extend Hermes: a part is a module with `register(hermes: Registry)`.

Built-in parts (memory, cron, …) are listed in `BUILTIN_PARTS`; third-party plugins declare an
entry point in the `hermes.plugins` group that names a module (or a `register` callable)::

    [project.entry-points."hermes.plugins"]
    weather = "hermes_weather"

and are loaded by the same function, through the same `Registry`, as the built-ins. Only
factories run when a surface needs them (routers for `hermes serve`, commands for the CLI), so
loading every part stays cheap.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from hermes.config.settings import Settings
from hermes.errors import HermesError

if TYPE_CHECKING:  # the contracts parts implement: named in signatures, never called here
    from hermes.agent.context import PromptBlock
    from hermes.agent.memory_providers import MemoryProvider
    from hermes.delivery import Deliverer
    from hermes.runtime import Runtime
    from hermes.tools.registry import Tool, ToolSource

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "hermes.plugins"
BUILTIN_PARTS: tuple[str, ...] = (
    "hermes.memory.part",
    "hermes.cron.part",
    "hermes.gateway.part",
    "hermes.tools.part",
    "hermes.delegation.part",
    "hermes.db.part",
    "hermes.skills.part",
    "hermes.mcp_servers.part",
)

HealthResult = dict[str, Any]
HealthCheck = Callable[["Runtime"], Awaitable[HealthResult]]


@dataclass(frozen=True)
class Count:
    """One sample of a counter a part reports on `/metrics` (`hermes_<name>_total`): read
    when the metrics are scraped, from counts the part keeps anyway."""

    name: str
    help: str
    value: float
    labels: dict[str, str] = field(default_factory=dict)


Counts = Callable[["Runtime"], Iterable[Count]]


@dataclass(frozen=True)
class Daemon:
    """A background part of `hermes serve` (cron ticker, gateway) with an async start and stop.
    Daemons start in registration order after the runtime is open and stop in reverse. (Not a
    "service": that is a collaborator found by type in `hermes.services.Services`.)"""

    name: str
    start: Callable[[], Awaitable[None]]
    stop: Callable[[], Awaitable[None]] | None = None


class PluginError(HermesError):
    """A part could not be loaded or registered something invalid; names the part."""


@dataclass(frozen=True)
class ToolEntry:
    """A registered tool, the group toolsets filter by, and whether the settings enable it."""

    tool: Tool
    group: str
    enabled: Callable[[Settings], bool] = lambda _settings: True


@dataclass
class Registry:
    """Everything the parts contributed. Parts call the verbs; the composition root reads it."""

    tools: list[ToolEntry] = field(default_factory=list)
    prompt_blocks: list[Callable[[Settings], PromptBlock]] = field(default_factory=list)
    memory_providers: list[Callable[[Settings], MemoryProvider | None]] = field(
        default_factory=list
    )
    components: list[Callable[[Runtime], object]] = field(default_factory=list)
    daemons: list[Callable[[Runtime], Daemon | None]] = field(default_factory=list)
    routers: list[Callable[[], Any]] = field(default_factory=list)
    deliverers: list[Callable[[Runtime], Deliverer]] = field(default_factory=list)
    commands: list[tuple[str, Callable[[], Any]]] = field(default_factory=list)
    health_checks: list[tuple[str, HealthCheck]] = field(default_factory=list)
    counts: list[Counts] = field(default_factory=list)
    tool_sources: list[Callable[[Runtime], ToolSource]] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)

    # -- verbs parts call ------------------------------------------------------------------

    def tool(
        self,
        tool: Tool,
        *,
        group: str | None = None,
        enabled: Callable[[Settings], bool] | None = None,
    ) -> None:
        """Offer `tool` to the agent; `group` (default: its name) is what toolsets filter by."""
        if any(e.tool.name == tool.name for e in self.tools):
            raise PluginError(f"two parts register a tool named {tool.name!r}")
        self.tools.append(ToolEntry(tool, group or tool.name, enabled or (lambda _s: True)))

    def tool_source(self, factory: Callable[[Runtime], ToolSource]) -> None:
        """Tools that appear while the process runs (MCP servers): `factory(runtime)` runs after
        the components are made; the agent's toolset reads the source's tools on every turn."""
        self.tool_sources.append(factory)

    def prompt_block(self, factory: Callable[[Settings], PromptBlock]) -> None:
        """A system-prompt section (after the memory blocks), built once per runtime."""
        self.prompt_blocks.append(factory)

    def memory_provider(self, factory: Callable[[Settings], MemoryProvider | None]) -> None:
        """A memory layer; `factory` returns None to stay off for these settings (an external
        provider that `memory.provider` does not name)."""
        self.memory_providers.append(factory)

    def component(self, factory: Callable[[Runtime], object]) -> None:
        """A long-lived object made once per runtime and put in `runtime.services` by type."""
        self.components.append(factory)

    def daemon(self, factory: Callable[[Runtime], Daemon | None]) -> None:
        """A background daemon of `hermes serve` (return None to stay off for these settings)."""
        self.daemons.append(factory)

    def router(self, factory: Callable[[], Any]) -> None:
        """A FastAPI `APIRouter` for `hermes serve`, built only when the server starts."""
        self.routers.append(factory)

    def deliverer(self, factory: Callable[[Runtime], Deliverer]) -> None:
        self.deliverers.append(factory)

    def command(self, name: str, factory: Callable[[], Any]) -> None:
        """A `hermes <name> …` command group: `factory` returns a `typer.Typer`."""
        if any(n == name for n, _ in self.commands):
            raise PluginError(f"two parts register the command {name!r}")
        self.commands.append((name, factory))

    def health(self, name: str, check: HealthCheck) -> None:
        """A `/health` component: `check(runtime)` returns at least `{"status": "ok"|…}`."""
        self.health_checks.append((name, check))

    def metrics(self, counts: Counts) -> None:
        """Counters for `/metrics`: `counts(runtime)` yields `Count`s at each scrape."""
        self.counts.append(counts)

    # -- reading ---------------------------------------------------------------------------

    def enabled_tools(self, settings: Settings) -> list[ToolEntry]:
        return [e for e in self.tools if e.enabled(settings)]


def _register_callable(target: Any, name: str) -> Callable[[Registry], None]:
    register = getattr(target, "register", target)
    if not callable(register):
        raise PluginError(f"plugin {name!r} has no register(hermes) function")
    return register  # type: ignore[no-any-return]


def load_part(registry: Registry, module_path: str) -> None:
    """Import a built-in part by module path and let it register."""
    register = _register_callable(importlib.import_module(module_path), module_path)
    register(registry)
    registry.loaded.append(module_path)


def _plugin_entry_points() -> Iterable[Any]:
    return entry_points(group=ENTRY_POINT_GROUP)


def load_registry(*, plugins: bool = True, parts: Iterable[str] = BUILTIN_PARTS) -> Registry:
    """Every built-in part, then every installed plugin. A broken third-party plugin is logged
    and skipped (Hermes still starts); a broken built-in part is a bug and raises."""
    registry = Registry()
    for module_path in parts:
        load_part(registry, module_path)
    if plugins:
        for ep in _plugin_entry_points():
            try:
                register = _register_callable(ep.load(), ep.name)
                register(registry)
            except Exception:
                log.exception("plugin %r (%s) failed to load; skipped", ep.name, ep.value)
                continue
            registry.loaded.append(f"plugin:{ep.name}")
    return registry
