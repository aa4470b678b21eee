"""The skills index in the system prompt: name and one-line description of each skill that
fits this surface and toolset, grouped by category, within a token budget. Bodies stay on disk
until the model asks for one with `skill_view` (progressive disclosure)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hermes.agent.context import PromptBlock, PromptContext
from hermes.agent.tokens import estimate_text_tokens
from hermes.config.settings import Settings
from hermes.skills.library import Skill
from hermes.skills.store import can_write, library_for

log = logging.getLogger(__name__)

HEADER = (
    "## Skills\n"
    "Skills are procedures saved from earlier work. Before replying, scan the list below; if "
    "one clearly matches the task, load it with skill_view(name) and follow it."
)
# when to save one is skill_manage's own description (sent whenever the tool is)
WRITE_HINT = "New procedures and fixes to wrong ones go through skill_manage."
DESCRIPTION_LIMITS = (100, 60, 30, 0)


def _line(skill: Skill, limit: int) -> str:
    if limit <= 0:
        return f"- {skill.name}"
    text = skill.description
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return f"- {skill.name}: {text}"


def _render(skills: Sequence[Skill], limit: int, header: str, more: int) -> str:
    lines = [header, "<available_skills>"]
    category: str | None = None
    for skill in skills:
        if skill.category != category:
            category = skill.category
            lines.append(f"{category or 'general'}:")
        lines.append(_line(skill, limit))
    if more:
        lines.append(f"… and {more} more (skills_list shows every skill)")
    lines.append("</available_skills>")
    return "\n".join(lines)


def render_index(skills: Sequence[Skill], budget_tokens: int, *, can_write: bool) -> str | None:
    """The index, shortening descriptions and then dropping entries until it fits the budget."""
    if not skills:
        return None
    header = f"{HEADER}\n{WRITE_HINT}" if can_write else HEADER
    for limit in DESCRIPTION_LIMITS:
        text = _render(skills, limit, header, 0)
        if estimate_text_tokens(text) <= budget_tokens:
            return text
    kept = list(skills)
    while kept:
        kept.pop()
        text = _render(kept, 0, header, len(skills) - len(kept))
        if estimate_text_tokens(text) <= budget_tokens:
            return text
    return None


def skills_block(settings: Settings) -> PromptBlock:
    """The prompt-block factory the skills part registers."""

    def block(ctx: PromptContext) -> str | None:
        if not settings.skills.enabled or "skill_view" not in ctx.tool_names:
            return None  # a model that cannot load skills gains nothing from their names
        try:
            scan = library_for(settings).scan()
        except OSError as exc:
            log.warning("skills index skipped: %s", exc)
            return None
        for problem in scan.problems:
            log.warning("skill skipped: %s", problem)
        shown = [s for s in scan.skills if s.available_on(ctx.platform, ctx.tool_names)]
        return render_index(
            shown,
            settings.skills.index_token_budget,
            can_write="skill_manage" in ctx.tool_names and can_write(ctx.scope),
        )

    return block
