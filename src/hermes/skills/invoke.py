"""`/<skill-name> <text>`: a turn with that skill's instructions loaded.

Surfaces (the CLI chat, the gateway) call `expand_skill_command` with the user's line; when it
names installed skills they run the turn with `system_extra` (the skills' bodies, sent with
this turn only) and `user_message` (the user's own text, which is what gets stored).
"""

from __future__ import annotations

from hermes.agent.invocations import Invocation, SlashInvocations
from hermes.config.settings import Settings
from hermes.skills.library import Skill
from hermes.skills.store import library_for

MAX_STACKED = 5


def _instructions(skill: Skill, user_text: str) -> str:
    return (
        f'[SYSTEM: The user has invoked the "{skill.name}" skill, indicating they want you to '
        "follow its instructions. The full skill content is loaded below.]\n\n"
        f"{skill.body}"
    )


def expand_skill_command(
    settings: Settings, text: str, *, platform: str = "cli"
) -> Invocation | None:
    """The turn for `/<skill> [/<skill> …] <text>`, or None when the line names no installed
    skill (so the surface can handle it as its own command or say it is unknown)."""
    if not text.startswith("/") or not settings.skills.enabled:
        return None
    library = library_for(settings)
    words = text.split()
    found: list[Skill] = []
    while words and words[0].startswith("/") and len(found) < MAX_STACKED:
        skill = library.find(words[0][1:])
        if skill is None or not skill.available_on(platform, None):
            break
        if skill not in found:
            found.append(skill)
        words.pop(0)
    if not found:
        return None
    rest = text.split(None, len(text.split()) - len(words))[-1] if words else ""
    user_text = rest.strip()
    names = tuple(s.name for s in found)
    extra = "\n\n".join(_instructions(s, user_text) for s in found)
    message = user_text or f"Run the {', '.join(names)} skill{'s' if len(names) > 1 else ''} now."
    return Invocation(names=names, system_extra=extra, user_message=message)


class SkillInvocations(SlashInvocations):
    """`/<skill> text` for the gateway (the skills part puts one in the runtime's services)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def expand(self, text: str, *, platform: str) -> Invocation | None:
        return expand_skill_command(self.settings, text, platform=platform)

    def listing(self, *, platform: str) -> list[tuple[str, str]]:
        if not self.settings.skills.enabled:
            return []
        skills = library_for(self.settings).skills()
        return sorted((s.name, s.description) for s in skills if s.available_on(platform, None))
