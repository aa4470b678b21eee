"""The chat's way into skills (`/skills`, `/<skill> text`, completion of skill names),
through the skills part's public functions."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hermes.config.settings import Settings
from hermes.skills.invoke import expand_skill_command
from hermes.skills.store import library_for

log = logging.getLogger(__name__)

OFF = "skills are off (skills.enabled: false in config.yaml)"


@dataclass(frozen=True)
class SkillTurn:
    """A typed `/<skill> text` line as a turn: the text, with the skills' instructions."""

    user_message: str
    system_extra: str
    skills: tuple[str, ...]


def available(settings: Settings) -> bool:
    return settings.skills.enabled


def skill_list(settings: Settings) -> list[tuple[str, str]]:
    """(name, description) of every installed skill the chat can run."""
    if not settings.skills.enabled:
        return []
    try:
        skills = library_for(settings).skills()
    except OSError as exc:  # an unreadable skills directory must not break typing
        log.warning("could not read the skills: %s", exc)
        return []
    return sorted((s.name, s.description) for s in skills if s.available_on("cli", None))


def expand(settings: Settings, line: str) -> SkillTurn | None:
    """The turn for `/<skill> [text]`, or None when the line names no installed skill."""
    found = expand_skill_command(settings, line, platform="cli")
    if found is None:
        return None
    return SkillTurn(found.user_message, found.system_extra, found.names)
