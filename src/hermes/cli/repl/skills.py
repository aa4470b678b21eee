"""The chat's hook into skills (`/skills`, `/<skill> text`, completion of skill names).

Skills are a part (`hermes.skills`); the chat reaches them through the part's public
functions, looked up at run time so a build without the part still chats (and says so).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from hermes.config.settings import Settings

MISSING = (
    "skills are not available in this build (the hermes.skills part is missing); "
    "/<skill> commands need it"
)


@dataclass(frozen=True)
class SkillTurn:
    """A typed `/<skill> text` line as a turn: the text, with the skills' instructions."""

    user_message: str
    system_extra: str
    skills: tuple[str, ...]


def _module(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def available() -> bool:
    return _module("hermes.skills.invoke") is not None


def skill_list(settings: Settings) -> list[tuple[str, str]]:
    """(name, description) of every installed skill; [] without the skills part."""
    store = _module("hermes.skills.store")
    if store is None or not getattr(settings, "skills", None) or not settings.skills.enabled:  # type: ignore[attr-defined]
        return []
    try:
        skills = store.library_for(settings).skills()
    except Exception:
        return []
    return sorted((s.name, s.description) for s in skills)


def expand(settings: Settings, line: str) -> SkillTurn | None:
    """The turn for `/<skill> [text]`, or None when the line names no installed skill."""
    invoke = _module("hermes.skills.invoke")
    if invoke is None:
        return None
    found = invoke.expand_skill_command(settings, line, platform="cli")
    if found is None:
        return None
    return SkillTurn(found.user_message, found.system_extra, tuple(found.skills))
