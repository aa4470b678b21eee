"""One way to extend Hermes: a part is a module with `register(hermes: Registry)`.

Built-in parts (memory, cron, …) are listed in `BUILTIN_PARTS`; third-party plugins declare an
entry point in the `hermes.plugins` group that names a module (or a `register` callable)::

    [project.entry-points."hermes.plugins"]
    weather = "hermes_weather"

and are loaded by the same function, through the same `Registry`, as the built-ins. Only
factories run when a surface needs them (routers for `hermes serve`, commands for the CLI), so
loading every part stays cheap.

Messaging platforms (`platform()`) and model backends (`model_provider()`) are registered the
same way, built-ins included. Which installed plugins load is the user's choice, as with
simonw/llm's `LLM_LOAD_PLUGINS`: `HERMES_LOAD_PLUGINS=a,b` (or `plugins.load`) loads only
those (`none`: no plugin at all), `plugins.disabled` names plugins to skip; `hermes plugins
list` shows what is installed, what each part registered, and whether it is on.
"""

from __future__ import annotations

import importlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes import entry_points as installed_entry_points
from hermes.config.settings import ConfigError, Settings
from hermes.errors import HermesError

if TYPE_CHECKING:  # the contracts parts implement: named in signatures, never called here
    from hermes.agent.context import PromptBlock
    from hermes.agent.memory_providers import MemoryProvider
    from hermes.delivery import Deliverer
    from hermes.gateway.platforms import PlatformSpec
    from hermes.models.client import ModelClient
    from hermes.runtime import Runtime
    from hermes.tools.registry import Tool, ToolSource

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "hermes.plugins"
BUILTIN_PARTS: tuple[str, ...] = (
    "hermes.models.part",
    "hermes.memory.part",
    "hermes.recall.part",
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
ModelProvider = Callable[[Settings, "str | None"], "ModelClient"]
"""`factory(settings, model)` → the client for `model` (None: `model.name`)."""


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
    platforms: dict[str, PlatformSpec | str] = field(default_factory=dict)
    model_providers: dict[str, ModelProvider] = field(default_factory=dict)
    loaded: list[str] = field(default_factory=list)
    plugins: list[PluginInfo] = field(default_factory=list)
    """Every part and installed plugin, loaded or not (`hermes plugins list`)."""

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

    def platform(self, name: str, spec: PlatformSpec | str) -> None:
        """A messaging platform (`gateway.<name>`): its `PlatformSpec`, or the path of a module
        whose `PLATFORM` is one, imported only when the gateway needs it (so its library is
        required only once its credentials are set)."""
        if name in self.platforms:
            raise PluginError(f"two parts register a messaging platform named {name!r}")
        self.platforms[name] = spec

    def model_provider(self, name: str, factory: ModelProvider) -> None:
        """A model backend that `model.provider: <name>` (HERMES_MODEL_PROVIDER) selects;
        `factory(settings, model)` returns its `ModelClient`."""
        if name in self.model_providers:
            raise PluginError(f"two parts register a model provider named {name!r}")
        self.model_providers[name] = factory

    # -- reading ---------------------------------------------------------------------------

    def enabled_tools(self, settings: Settings) -> list[ToolEntry]:
        return [e for e in self.tools if e.enabled(settings)]

    def model_client(self, settings: Settings, model: str | None = None) -> ModelClient:
        """The client of the provider `model.provider` names."""
        name = settings.model.provider
        factory = self.model_providers.get(name)
        if factory is None:
            known = ", ".join(sorted(self.model_providers)) or "none"
            raise ConfigError(
                f"model.provider {name!r} is not a model provider Hermes knows (known: {known}); "
                "a plugin that provides it may be missing or disabled: see `hermes plugins list`"
            )
        return factory(settings, model)

    def inventory(self) -> Counter[str]:
        """What the parts registered, one label per contribution (`tool:memory`,
        `platform:slack`, `router`, …): `load_registry` diffs it to say what each part added."""
        named = [
            *(f"tool:{e.tool.name}" for e in self.tools),
            *(f"platform:{n}" for n in self.platforms),
            *(f"model_provider:{n}" for n in self.model_providers),
            *(f"command:{n}" for n, _ in self.commands),
            *(f"health:{n}" for n, _ in self.health_checks),
        ]
        unnamed: dict[str, list[Any]] = {
            "prompt_block": self.prompt_blocks,
            "memory_provider": self.memory_providers,
            "component": self.components,
            "daemon": self.daemons,
            "router": self.routers,
            "deliverer": self.deliverers,
            "metrics": self.counts,
            "tool_source": self.tool_sources,
        }
        found = Counter(named)
        found.update({label: len(items) for label, items in unnamed.items() if items})
        return found


@dataclass(frozen=True)
class PluginInfo:
    """One part or installed plugin as `hermes plugins list` shows it."""

    name: str
    module: str
    source: str
    """`built-in`, or the distribution that installed it (`hermes-weather 0.1`)."""
    enabled: bool
    registers: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class PluginSelection:
    """Which installed plugins load: `load` (None: all) minus `disabled`. Built-in parts
    always load: Hermes is made of them."""

    load: frozenset[str] | None = None
    disabled: frozenset[str] = frozenset()

    @classmethod
    def of(cls, settings: Settings | None) -> PluginSelection:
        if settings is None:
            return cls()
        listed = settings.plugins.load
        return cls(
            None if listed is None else frozenset(listed), frozenset(settings.plugins.disabled)
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> PluginSelection:
        """`HERMES_LOAD_PLUGINS` alone, read as `load_settings` reads it (empty: unset), for
        what runs before settings exist: the CLI's list of commands."""
        from hermes.config.settings import PluginsSettings

        value = env.get("HERMES_LOAD_PLUGINS")
        if not value:
            return cls()
        listed = PluginsSettings.model_validate({"load": value}).load
        return cls(frozenset(listed or ()))

    def wants(self, name: str) -> bool:
        return (self.load is None or name in self.load) and name not in self.disabled


def _register_callable(target: Any, name: str) -> Callable[[Registry], None]:
    register = getattr(target, "register", target)
    if not callable(register):
        raise PluginError(f"plugin {name!r} has no register(hermes) function")
    return register  # type: ignore[no-any-return]


def _added(registry: Registry, before: Counter[str]) -> tuple[str, ...]:
    grown = registry.inventory() - before
    return tuple(label if n == 1 else f"{label}×{n}" for label, n in sorted(grown.items()))


def load_part(registry: Registry, module_path: str) -> None:
    """Import a built-in part by module path and let it register."""
    before = registry.inventory()
    register = _register_callable(importlib.import_module(module_path), module_path)
    register(registry)
    registry.loaded.append(module_path)
    name = module_path.removeprefix("hermes.").removesuffix(".part")
    registry.plugins.append(
        PluginInfo(name, module_path, "built-in", True, _added(registry, before))
    )


def _plugin_entry_points() -> Iterable[Any]:
    return installed_entry_points.select(ENTRY_POINT_GROUP)


def _source(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "installed"


def _load_plugin(registry: Registry, ep: Any) -> PluginInfo:
    before = registry.inventory()
    tools_before = len(registry.tools)
    try:
        register = _register_callable(ep.load(), ep.name)
        register(registry)
        for entry in registry.tools[tools_before:]:
            # built here, not at the first turn (`Tool` builds them when first asked): a
            # plugin whose tool has no valid schema is skipped at load, as it always was
            _ = entry.tool.parameters
    except Exception as exc:
        del registry.tools[tools_before:]
        log.exception("plugin %r (%s) failed to load; skipped", ep.name, ep.value)
        return PluginInfo(ep.name, ep.value, _source(ep), False, error=f"{exc}")
    registry.loaded.append(f"plugin:{ep.name}")
    return PluginInfo(ep.name, ep.value, _source(ep), True, _added(registry, before))


def load_registry(
    settings: Settings | None = None,
    *,
    plugins: bool = True,
    parts: Iterable[str] = BUILTIN_PARTS,
    selection: PluginSelection | None = None,
) -> Registry:
    """Every built-in part, then every installed plugin the selection (default: the
    settings' `plugins` section) wants. A broken third-party plugin is logged and skipped
    (Hermes still starts); a broken built-in part is a bug and raises."""
    selection = selection or PluginSelection.of(settings)
    registry = Registry()
    for module_path in parts:
        load_part(registry, module_path)
    if not plugins:
        return registry
    for ep in _plugin_entry_points():
        if selection.wants(ep.name):
            registry.plugins.append(_load_plugin(registry, ep))
        else:
            registry.plugins.append(PluginInfo(ep.name, ep.value, _source(ep), False))
    return registry
