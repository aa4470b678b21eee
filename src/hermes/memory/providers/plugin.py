"""Registering an external memory provider: what Hermes' own adapters call, and what a third
party's plugin calls from its `register(hermes)` the same way (`hermes.plugins`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes.config.settings import Settings
from hermes.memory.providers.external import BackendFactory, ExternalMemory
from hermes.plugins import Registry
from hermes.tools.registry import Tool, ToolContext, ToolError

TOOL_GROUP = "memory"  # end users get it for their own scope; cron and delegates do not
MAX_RESULTS = 20


def add_provider(
    hermes: Registry,
    name: str,
    make_backend: BackendFactory,
    about: str,
    *,
    chosen: Callable[[Settings], bool] | None = None,
) -> None:
    """Offer the provider `name`: the layer (made only when `chosen(settings)`; by default
    when `memory.provider` names it, as for Hermes' own) and its `<name>_search` tool (enabled
    only then), described to the model by `about`. A third party's provider decides with
    `chosen` (e.g. from its `plugins.<name>` section); one external provider at most is on."""

    def named(settings: Settings) -> bool:
        return settings.memory.provider == name

    chosen = chosen or named

    def layer(settings: Settings) -> ExternalMemory | None:
        return ExternalMemory(name, settings, make_backend) if chosen(settings) else None

    hermes.memory_provider(layer)
    hermes.tool(search_tool(name, about), group=TOOL_GROUP, enabled=chosen)


def search_tool(name: str, about: str) -> Tool:
    async def search(ctx: ToolContext, query: str, limit: int = 8) -> dict[str, Any]:
        provider = ctx.service(ExternalMemory)
        if provider.name != name:
            raise ToolError(f"{name} is not the active memory provider")
        if not query.strip():
            raise ToolError("query is empty: say what to look for")
        try:
            found = await provider.search(ctx.scope, query, max(1, min(limit, MAX_RESULTS)))
        except TimeoutError:
            raise ToolError(
                f"{name} did not answer within {provider.timeout:g}s; go on without it"
            ) from None
        except Exception as exc:
            raise ToolError(f"{name} search failed ({type(exc).__name__}: {exc})") from None
        return {"provider": name, "results": found}

    search.__doc__ = f"""{about}

    Args:
        query: what to look for, in a few words.
        limit: the most results to return (1-{MAX_RESULTS}).
    """
    return Tool(search, name=f"{name}_search")
