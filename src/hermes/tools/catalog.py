"""The full built-in toolset; entry points narrow it (cron, API) by filtering, not by flags."""

from __future__ import annotations

from hermes.config.settings import Settings
from hermes.tools.registry import Tool, Toolset


def builtin_tools(settings: Settings) -> list[Tool]:
    """Every built-in tool enabled by the settings, in a stable order (stable prompt prefix)."""
    tools: list[Tool] = []
    from hermes.memory.search import session_search
    from hermes.memory.tool import memory_tool

    if settings.memory.enabled:
        tools.append(memory_tool)
    tools.append(session_search)
    if settings.cron.enabled:
        from hermes.cron.tool import cronjob

        tools.append(cronjob)
    return tools


def default_toolset(settings: Settings) -> Toolset:
    toolset = Toolset(builtin_tools(settings))
    if settings.agent.toolsets is not None:
        toolset = toolset.only(settings.agent.toolsets)
    return toolset
