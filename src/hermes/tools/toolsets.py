"""Which tools a turn is offered, chosen in one place from (settings, scope, surface).

- the owner (default scope: the CLI, the API without X-Hermes-User-Id, the owner's gateway
  identities) gets every enabled tool;
- end users (any other scope) get the groups in `tools.end_user_toolsets`, by default memory,
  session_search, web and skills (read only): never terminal, file writes or delegation;
- cron runs get their scope's set without memory writes, the memory provider's tools,
  scheduling or direct messaging;
- delegated sub-agents get their caller's set without delegation, memory writes or the memory
  provider's tools.

Groups come from the parts (`hermes.tool(t, group=...)`); `ToolGroups` maps each tool name to
its group, and a name with no group is its own group. An entry of `end_user_toolsets` may
name a group or a single tool.
"""

from __future__ import annotations

from collections.abc import Mapping

from hermes.config.settings import Settings
from hermes.store.base import DEFAULT_SCOPE
from hermes.tools.registry import Toolset

END_USER_GROUPS: tuple[str, ...] = ("memory", "session_search", "web", "skills")
# read-only skills for end users unless they are named explicitly
END_USER_WITHHELD: tuple[str, ...] = ("skill_manage",)
CRON_WITHHELD: tuple[str, ...] = ("memory", "cronjob", "send_message", "clarify")
DELEGATE_WITHHELD: tuple[str, ...] = (
    "delegate_task",
    "memory",
    "cronjob",
    "send_message",
    "clarify",
)

SURFACE_CRON = "cron"
SURFACE_DELEGATE = "delegate"


class ToolGroups(dict[str, str]):
    """Tool name → group, as the parts registered them (a service of the runtime)."""

    def group_of(self, name: str) -> str:
        return self.get(name, name)


def _end_user(settings: Settings, full: Toolset, groups: Mapping[str, str]) -> Toolset:
    configured = settings.tools.end_user_toolsets
    wanted = set(END_USER_GROUPS if configured is None else configured)
    picked = [name for name in full.names() if name in wanted or groups.get(name, name) in wanted]
    if configured is None:
        picked = [n for n in picked if n not in END_USER_WITHHELD]
    return full.only(picked)


def select_toolset(
    settings: Settings,
    scope: str,
    surface: str,
    full: Toolset,
    groups: Mapping[str, str] | None = None,
) -> Toolset:
    """The tools a turn of `scope` on `surface` (a TurnRequest's source: cli, api, cron,
    telegram, …, or "delegate") may use, out of `full` (every enabled tool)."""
    groups = groups or {}
    toolset = full if scope == DEFAULT_SCOPE else _end_user(settings, full, groups)
    if surface == SURFACE_CRON:
        toolset = _withhold(toolset, CRON_WITHHELD, groups)
    elif surface == SURFACE_DELEGATE:
        toolset = _withhold(toolset, DELEGATE_WITHHELD, groups)
    return toolset


def _withhold(toolset: Toolset, entries: tuple[str, ...], groups: Mapping[str, str]) -> Toolset:
    """`toolset` without `entries`, each a tool or a group as in `end_user_toolsets`: so
    `memory` is the notes tool and the memory provider's own tools (`honcho_search`, …),
    which talk to the user's provider memory and have no place in a cron run or a delegate."""
    unwanted = set(entries)
    return toolset.without(
        [n for n in toolset.names() if n in unwanted or groups.get(n, n) in unwanted]
        + list(unwanted)
    )
