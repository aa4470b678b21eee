"""The memory pass: a background model call, with only the memory tool, over recent turns.

Runs after every `memory.review_interval`-th user turn of a session (the notes provider's
`sync_turn`, so the user's answer is already out), and on demand through `flush` before compression
discards messages. It never raises: a failing model or tool is logged and the turn stands.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from hermes.agent.compression import render_transcript as transcript_text
from hermes.agent.tool_loop import Limits, ToolChat, run_tool_loop
from hermes.config.settings import Settings
from hermes.memory.notes import open_notes
from hermes.memory.tool import NEAR_FULL, memory_tool
from hermes.models.errors import ModelError
from hermes.models.types import Completion
from hermes.observability import tracing
from hermes.store.base import Store
from hermes.tools.registry import ToolContext, Toolset

if TYPE_CHECKING:
    from hermes.agent.loop import Agent
    from hermes.agent.turn import TurnResult

log = logging.getLogger(__name__)

MAX_ROUNDS = 3  # a failed write (over the cap) may be retried after consolidating
MESSAGE_CHARS = 2_000
TRANSCRIPT_CHARS = 24_000
SKIPPED_SOURCES = frozenset({"cron"})  # scheduled runs do not write memory

SYSTEM = (
    "You maintain the long-term notes of an AI assistant about one user. You see the notes "
    "as they are now and part of a conversation. Save only what will matter in future "
    "conversations: the user's preferences and corrections, facts about the user and their "
    "circumstances (target 'user'), and stable facts about their environment, conventions "
    "and lessons learned (target 'memory'). Update an entry that became wrong instead of "
    "adding a contradicting one. Skip trivia, one-off task details and anything already in "
    "the notes. If nothing is worth keeping, answer 'Nothing to save.' without calling tools."
)
REVIEW_PROMPT = (
    "Review the conversation above and consider saving to memory what you learned about the "
    "user and their world that will still matter next time. Use the memory tool, or reply "
    "'Nothing to save.'"
)
FLUSH_PROMPT = (
    "The conversation above is about to be compressed and these messages will leave the "
    "context. Save anything worth remembering with the memory tool first, prioritising the "
    "user's preferences, corrections and recurring patterns; or reply 'Nothing to save.'"
)


def render_transcript(messages: list[dict[str, Any]], limit: int = TRANSCRIPT_CHARS) -> str:
    """The conversation as the memory pass reads it: tool traffic abbreviated, newest kept."""
    return transcript_text(
        messages, message_chars=MESSAGE_CHARS, tool_chars=300, limit=limit, skip_system=True
    )


def _notes_now(settings: Settings, scope: str, store: Store) -> str:
    notes = open_notes(settings, scope, store)
    parts = []
    for target in ("memory", "user"):
        state = notes.read(target)
        entries = "\n".join(_entry_line(state.written.get(e), e) for e in state.entries)
        parts.append(f"{state.path.name} [{state.usage}]:\n{entries or '(empty)'}")
        if state.chars >= NEAR_FULL * state.limit:
            parts.append(CONSOLIDATE.format(name=state.path.name, target=target))
    return "\n\n".join(parts)


def _entry_line(written: str | None, entry: str) -> str:
    return f"- ({written}) {entry}" if written else f"- {entry}"


CONSOLIDATE = (
    "{name} is nearly full. Before adding, propose a consolidation with one `operations` "
    "call on target '{target}': merge entries about the same thing, drop stale or "
    "superseded ones (they are archived, not lost)."
)


async def memory_pass(
    agent: Agent, scope: str, session_id: str, messages: list[dict[str, Any]], instruction: str
) -> int:
    """One model call (more only to retry failed writes); returns how many writes succeeded."""
    settings = agent.settings
    notes = await asyncio.to_thread(_notes_now, settings, scope, agent.store)
    prompt = (
        f"Current notes:\n{notes}\n\n<conversation>\n{render_transcript(messages)}\n"
        f"</conversation>\n\n{instruction}"
    )
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    toolset = Toolset([memory_tool])
    ctx = ToolContext(
        scope=scope,
        session_id=session_id,
        platform="memory-review",
        services=agent.services,
    )
    conversation = ToolChat(agent.model, toolset, ctx, chat)  # calls in order: same files
    saved = 0
    unresolved: str | None = None

    async def act(completion: Completion) -> bool:
        nonlocal saved, unresolved
        unresolved = None
        ctx.reason = (completion.content or "").strip() or None  # recorded with the versions
        for call, outcome in await conversation.run(completion):
            saved += outcome.ok
            if not outcome.ok:
                unresolved = outcome.text
                log.info("memory pass: %s call refused: %s", call.name, outcome.text[:200])
        return unresolved is None  # another round only to retry a refused write

    await run_tool_loop(conversation.ask, act, Limits(MAX_ROUNDS), chat)
    if unresolved is not None:  # refused and not retried successfully: the user must know
        keeper = open_notes(settings, scope, agent.store)
        await asyncio.to_thread(keeper.record_failure, unresolved.splitlines()[0])
    return saved


async def _guarded(
    agent: Agent,
    scope: str,
    session_id: str,
    messages: list[dict[str, Any]],
    instruction: str,
    what: str,
) -> None:
    try:
        saved = await memory_pass(agent, scope, session_id, messages, instruction)
    except ModelError as exc:
        log.warning("%s for session %s failed: %s", what, session_id, exc)
        return
    except Exception:
        log.exception("%s for session %s failed", what, session_id)
        return
    if saved:
        log.info("%s for session %s saved %d note change(s)", what, session_id, saved)


async def flush(agent: Agent, scope: str, session_id: str, messages: list[dict[str, Any]]) -> None:
    """Save what is worth keeping from messages about to leave the context (compression)."""
    if not agent.settings.memory.enabled or not messages:
        return
    await _guarded(agent, scope, session_id, messages, FLUSH_PROMPT, "memory flush")


def _recent_turns(records: list[Any], turns: int) -> list[dict[str, Any]]:
    """The messages of the last `turns` user turns."""
    starts = [i for i, r in enumerate(records) if r.role == "user"]
    start = starts[-turns] if len(starts) >= turns else 0
    return [r.to_openai() for r in records[start:]]


async def _tail(agent: Agent, scope: str, session_id: str, end: int, turns: int) -> list[Any]:
    """The stored messages before index `end` that hold its last `turns` user turns, read
    backwards in widening steps: a long session must not cost a read of its whole history."""
    step = 4 * turns  # a user message and its answer, with room for some tool traffic
    start = end
    records: list[Any] = []
    while start > 0 and sum(r.role == "user" for r in records) < turns:
        lower = max(0, start - step)
        older = await asyncio.to_thread(
            agent.store.get_messages, scope, session_id, start=lower, end=start
        )
        records = older + records
        start, step = lower, step * 2
    return records


async def review(agent: Agent, result: TurnResult) -> None:
    """Every `review_interval` user turns of a session, one background memory pass."""
    settings = agent.settings
    interval = settings.memory.review_interval
    if not settings.memory.enabled or interval <= 0 or result.user_turn_number % interval:
        return
    if result.source in SKIPPED_SOURCES:
        return
    records = await _tail(agent, result.scope, result.session_id, result.message_count, interval)
    messages = _recent_turns(records, interval)
    if not messages:
        return
    with tracing.span("hermes.memory.review", **{"hermes.review.messages": len(messages)}):
        await _guarded(
            agent, result.scope, result.session_id, messages, REVIEW_PROMPT, "memory review"
        )
