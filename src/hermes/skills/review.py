"""The skill review: after an owner's turn that needed many tool calls or recovered from failed
ones, a background model call may save the procedure as a skill, or patch a skill that was
used and proved wrong. It runs as a built-in memory provider's `sync_turn`, so the user's
answer is already out and a failure is only logged.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes.agent.memory_providers import MemoryProvider
from hermes.agent.tool_loop import Limits, ToolChat, run_tool_loop
from hermes.config.settings import Settings
from hermes.models.errors import ModelError
from hermes.models.types import Completion
from hermes.services import Services
from hermes.skills.store import can_write, library_for
from hermes.skills.tools import skill_manage, skill_view, skills_list
from hermes.store.base import MessageRecord
from hermes.tools.registry import ToolContext, Toolset

if TYPE_CHECKING:
    from hermes.agent.loop import Agent
    from hermes.agent.turn import TurnResult

log = logging.getLogger(__name__)

MAX_ROUNDS = 4
SKIPPED_SOURCES = frozenset({"cron", "skill-review", "memory-review"})
TRANSCRIPT_CHARS = 24_000

SYSTEM = (
    "You maintain the skill library of an AI assistant: short, reusable procedures saved as "
    "SKILL.md files (YAML frontmatter with `name` (lowercase slug) and a one-line "
    "`description`, then Markdown sections: When to Use, Procedure, Pitfalls, Verification). "
    "A skill is worth saving when the task will come back and the way to do it was not "
    "obvious: many steps, a fix found after errors, a correction by the user. Write the "
    "procedure that worked, general enough to reuse, without this conversation's one-off "
    "details or any secrets. If a skill that was used gave wrong or outdated instructions, "
    "patch it. If nothing is worth saving, reply 'Nothing to save.' without calling tools."
)
REVIEW_PROMPT = (
    "Review the conversation above and update the skill library: create a skill for a "
    "reusable procedure it worked out, or patch a skill that proved wrong. Check skills_list "
    "first so you do not duplicate an existing skill. Or reply 'Nothing to save.'"
)


@dataclass
class TurnStats:
    tool_calls: int = 0
    failed_calls: int = 0
    recovered: bool = False
    skills_used: list[str] = field(default_factory=list)


def turn_stats(records: list[MessageRecord]) -> TurnStats:
    """Tool calls, failures and recovery (a failed call later followed by one that worked)
    in this turn's stored messages."""
    stats = TurnStats()
    failed_before = False
    for record in records:
        for call in record.tool_calls or []:
            stats.tool_calls += 1
            fn = call.get("function") or {}
            if fn.get("name") == "skill_view":
                try:
                    name = json.loads(fn.get("arguments") or "{}").get("name")
                except (ValueError, AttributeError):
                    name = None
                if isinstance(name, str) and name not in stats.skills_used:
                    stats.skills_used.append(name)
        if record.role == "tool":
            failed = (record.content or "").startswith("Error:")
            stats.failed_calls += failed
            if failed_before and not failed:
                stats.recovered = True
            failed_before = failed_before or failed
    return stats


def should_review(settings: Settings, result: TurnResult, stats: TurnStats) -> bool:
    threshold = settings.skills.review_min_tool_calls
    if not settings.skills.enabled or threshold <= 0:
        return False
    if not can_write(result.scope) or result.source in SKIPPED_SOURCES:
        return False
    return stats.tool_calls >= threshold or stats.recovered


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_turn(records: list[MessageRecord]) -> str:
    lines: list[str] = []
    for r in records:
        if r.role == "tool":
            lines.append(f"TOOL RESULT ({r.tool_name}): {_clip(r.content or '', 600)}")
            continue
        for call in r.tool_calls or []:
            fn = call.get("function") or {}
            lines.append(
                f"ASSISTANT called {fn.get('name')}({_clip(str(fn.get('arguments')), 400)})"
            )
        if r.content:
            lines.append(f"{r.role.upper()}: {_clip(r.content, 2_000)}")
    text = "\n\n".join(lines)
    return text if len(text) <= TRANSCRIPT_CHARS else "[… cut …]\n" + text[-TRANSCRIPT_CHARS:]


def _prompt(records: list[MessageRecord], stats: TurnStats) -> str:
    notes = [f"This turn made {stats.tool_calls} tool calls, {stats.failed_calls} of them failed."]
    if stats.skills_used:
        notes.append(
            "Skills loaded during the turn: "
            + ", ".join(stats.skills_used)
            + ". If one of them led to the failures, patch it with what worked."
        )
    return f"<conversation>\n{render_turn(records)}\n</conversation>\n\n{' '.join(notes)}\n\n{REVIEW_PROMPT}"


async def skill_pass(agent: Agent, result: TurnResult, stats: TurnStats) -> int:
    """One review conversation (a few rounds at most); returns how many writes succeeded."""
    toolset = Toolset([skills_list, skill_view, skill_manage])
    ctx = ToolContext(
        scope=result.scope,
        session_id=result.session_id,
        platform="skill-review",
        services=agent.services,
    )
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _prompt(result.stored, stats)},
    ]
    conversation = ToolChat(agent.model, toolset, ctx, chat)
    written = 0

    async def act(completion: Completion) -> bool:
        nonlocal written
        for call, outcome in await conversation.run(completion):
            if call.name == "skill_manage":
                written += outcome.ok
                if not outcome.ok:
                    log.info("skill review: write refused: %s", outcome.text[:200])
        return False

    await run_tool_loop(conversation.ask, act, Limits(MAX_ROUNDS), chat)
    return written


class SkillsProvider(MemoryProvider):
    """Built-in layer that runs the skill review after turns (no prompt text, no tools: the
    index is a prompt block and the tools are registered by the part)."""

    name = "skills"
    builtin = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._agent: Agent | None = None

    def initialize(self, services: Services) -> None:
        from hermes.agent.loop import Agent

        self._agent = services.find(Agent)

    async def sync_turn(self, result: TurnResult) -> None:
        if self._agent is None:
            return
        stats = turn_stats(result.stored)
        if not should_review(self.settings, result, stats):
            return
        library_for(self.settings)  # starters first, so the review sees what exists
        try:
            written = await skill_pass(self._agent, result, stats)
        except ModelError as exc:
            log.warning("skill review for session %s failed: %s", result.session_id, exc)
            return
        if written:
            log.info(
                "skill review for session %s wrote %d skill change(s)", result.session_id, written
            )
