"""The pieces of a compression pass: where to cut, what to summarise, how to show the summary.

Pure functions over OpenAI-style message dicts; the policy in history.py drives them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from hermes.agent.tokens import estimate_message_tokens, estimate_messages_tokens
from hermes.text import clip

SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns of this conversation were compacted "
    "into the summary below. Treat it as background reference, not as instructions: do not "
    "redo tasks it lists as done, and answer only the newest user message after it. Your notes "
    "and tools are still available; session_search can retrieve the original messages."
)
SUMMARY_SUFFIX = (
    "--- END OF CONTEXT SUMMARY — respond to the newest message, not to the summary ---"
)

SUMMARY_SECTIONS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Resolved Questions",
    "## Relevant Files",
    "## Critical Context",
    "## Next Steps",
)

SUMMARIZER_INSTRUCTIONS = (
    "You compress conversations for an AI assistant that will continue them. Write a factual "
    "summary in markdown with exactly these sections, in this order:\n"
    + "\n".join(SUMMARY_SECTIONS)
    + "\nKeep every concrete fact the assistant may need later: names, numbers, dates, "
    "decisions and their reasons, user preferences and corrections, file paths, commands, "
    "errors. Mark questions that were answered as resolved so they are not answered again. "
    "Write 'None' under a section with nothing in it. Never invent anything, never address the "
    "user, never include secrets (API keys, tokens, passwords)."
)

OLD_TOOL_OUTPUT_CHARS = 200
CLEARED_NOTE = "[old tool output cleared to save context space]"


def _safe_boundary(messages: Sequence[dict[str, Any]], index: int) -> int:
    """Move a cut left until it does not separate tool results from their assistant call."""
    while 0 < index < len(messages) and messages[index].get("role") == "tool":
        index -= 1
    return index


def head_end_for(messages: Sequence[dict[str, Any]], first_turns: int, budget: int) -> int:
    """End of the protected head: the first `first_turns` user turns, within a token budget."""
    users_seen = 0
    end = 0
    for i, msg in enumerate(messages):
        if msg.get("role") == "user":
            users_seen += 1
            if users_seen > first_turns:
                break
        end = i + 1
    while end > 0 and estimate_messages_tokens(list(messages[:end])) > budget:
        end -= 1
    return _safe_boundary(messages, end)


def tail_start_for(messages: Sequence[dict[str, Any]], head_end: int, budget: int) -> int:
    """Start of the kept tail: as many recent messages as fit the budget, starting on a user
    message when possible, never inside a tool-call group, always at least the last message."""
    used = 0
    start = len(messages)
    for i in range(len(messages) - 1, head_end - 1, -1):
        cost = estimate_message_tokens(messages[i])
        if used + cost > budget and start < len(messages):
            break
        used += cost
        start = i
    start = _safe_boundary(messages, start)
    # prefer to begin the tail at a user message (a clean turn boundary) if one is inside it
    for i in range(start, len(messages)):
        if messages[i].get("role") == "user":
            return i if i < len(messages) else start
    return max(start, head_end)


def clear_old_tool_outputs(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy of messages with large tool results shortened (they rarely matter for a summary)."""
    cleared: list[dict[str, Any]] = []
    for msg in messages:
        content = msg.get("content")
        if (
            msg.get("role") == "tool"
            and isinstance(content, str)
            and len(content) > OLD_TOOL_OUTPUT_CHARS
        ):
            msg = {**msg, "content": content[:OLD_TOOL_OUTPUT_CHARS] + " " + CLEARED_NOTE}
        cleared.append(msg)
    return cleared


def render_transcript(
    messages: Sequence[dict[str, Any]],
    *,
    message_chars: int | None = None,
    tool_chars: int | None = None,
    limit: int | None = None,
    skip_system: bool = False,
) -> str:
    """Plain-text transcript for a model that reads a conversation (the summariser, the memory
    pass): optional per-message and per-tool-result caps, keeping the newest when over `limit`."""
    lines: list[str] = []
    for msg in messages:
        role = str(msg.get("role", "?"))
        if skip_system and role == "system":
            continue
        content = msg.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        cap = tool_chars if role == "tool" else message_chars
        if cap is not None:
            content = clip(content, cap)
        if msg.get("tool_calls"):
            calls = ", ".join(
                f"{c['function']['name']}({clip(str(c['function']['arguments']), 200)})"
                for c in msg["tool_calls"]
            )
            content = f"{content}\n[calls {calls}]".strip()
        label = "TOOL RESULT" if role == "tool" else role.upper()
        lines.append(f"{label}: {content}")
    out = "\n\n".join(lines)
    if limit is None or len(out) <= limit:
        return out
    return "[… earlier messages cut …]\n" + out[-limit:]


def chunk_for_budget(
    messages: Sequence[dict[str, Any]], max_tokens: int
) -> list[list[dict[str, Any]]]:
    """Split the middle into pieces the summariser can read, keeping tool groups together."""
    chunks: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    used = 0
    for msg in messages:
        cost = estimate_message_tokens(msg)
        if current and used + cost > max_tokens and msg.get("role") != "tool":
            chunks.append(current)
            current, used = [], 0
        current.append(msg)
        used += cost
    if current:
        chunks.append(current)
    return chunks


def summarizer_request(
    previous: str | None, transcript: str, recalled: str | None = None
) -> list[dict[str, Any]]:
    """The summariser's messages; `recalled` is what a memory provider knows of the user,
    offered as background so the summary keeps the facts that matter to them."""
    if previous:
        task = (
            "Here is the existing summary of the conversation so far:\n\n"
            + previous
            + "\n\nUpdate it with the newer turns below. Keep what still holds, revise what "
            "changed (newer facts win), move finished work to Done, keep the same sections.\n\n"
            "NEWER TURNS:\n" + transcript
        )
    else:
        task = "Summarise these conversation turns:\n\n" + transcript
    if recalled:
        task += (
            "\n\nBACKGROUND (recalled memory about this user, reference only; use it to "
            "judge what matters, do not copy it into the summary unless the turns confirm it):"
            "\n" + recalled
        )
    return [
        {"role": "system", "content": SUMMARIZER_INSTRUCTIONS},
        {"role": "user", "content": task},
    ]


_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+\.\w+|\b[\w-]+\.(?:py|go|js|ts|md|json|yaml|yml|toml|sql|rs|java)\b"
)
_DECISION = re.compile(r"\b(decid\w*|decision|agreed|we will|let's go with|chose|choose)\b", re.I)


def fallback_summary(
    previous: str | None, messages: Sequence[dict[str, Any]], max_chars: int
) -> str:
    """A summary built without a model call, when the summariser is down: never lose the thread."""
    asks = [
        clip(m["content"], 240, squash=True)
        for m in messages
        if m.get("role") == "user" and isinstance(m.get("content"), str) and m["content"].strip()
    ]
    decisions = [
        clip(m["content"], 240, squash=True)
        for m in messages
        if isinstance(m.get("content"), str) and _DECISION.search(m["content"])
    ]
    files = sorted(
        {
            p
            for m in messages
            if isinstance(m.get("content"), str)
            for p in _PATH.findall(m["content"])
        }
    )
    last_answer = next(
        (
            clip(m["content"], 400, squash=True)
            for m in reversed(messages)
            if m.get("role") == "assistant" and m.get("content")
        ),
        "None",
    )
    parts = [
        "(automatic summary: the summariser was unavailable; the original messages remain "
        "searchable with session_search)"
    ]
    if previous:
        parts += ["## Earlier summary", previous.strip()]
    parts += ["## User requests in this part", *(f"- {a}" for a in asks[-15:])] if asks else []
    parts += ["## Key Decisions", *(f"- {d}" for d in decisions[-10:])] if decisions else []
    parts += ["## Relevant Files", *(f"- {f}" for f in files[:20])] if files else []
    parts += ["## Last answer in this part", last_answer]
    text = "\n".join(parts)
    if len(text) > max_chars:
        keep = max_chars // 2
        text = text[:keep] + "\n[…]\n" + text[-(max_chars - keep - 5) :]
    return text


def summary_block(summary: str) -> str:
    return f"{SUMMARY_PREFIX}\n\n{summary.strip()}\n\n{SUMMARY_SUFFIX}"


def assemble(
    head: list[dict[str, Any]], summary: str, tail: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """head + summary + tail, keeping user/assistant alternation where the roles allow."""
    block = summary_block(summary)
    if head and head[-1].get("role") == "user":
        return [*head, {"role": "assistant", "content": block}, *tail]
    if tail and tail[0].get("role") == "user" and isinstance(tail[0].get("content"), str):
        merged = {**tail[0], "content": block + "\n\n" + tail[0]["content"]}
        return [*head, merged, *tail[1:]]
    return [*head, {"role": "user", "content": block}, *tail]
