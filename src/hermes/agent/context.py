"""Builds the system prompt in SPEC §7 order: identity, tool guidance, blocks, time, platform."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

DEFAULT_IDENTITY = (
    "You are Hermes, a helpful assistant with a durable memory. You remember what the user "
    "tells you across conversations through your notes and your searchable history. Be direct, "
    "accurate and concise; say so when you do not know."
)

TOOL_GUIDANCE = (
    "You can call tools. Use them when they help answer the user's newest message; do not "
    "invent tool results. When a tool fails, read its error and adjust instead of repeating "
    "the same call."
)

PLATFORM_HINTS = {
    "cli": "You are talking with the user in a terminal; plain text and short markdown work.",
    "api": "You are answering through an API; another program may display your answer.",
    "cron": "You are running as a scheduled job; nobody is watching live.",
    "telegram": "You are chatting on Telegram; keep messages short and avoid wide tables.",
}


@dataclass(frozen=True)
class PromptContext:
    """What a prompt block may tailor its section to: whose session, the message that opened
    it, where the user is, and which tools the session offers."""

    scope: str
    user_message: str
    platform: str
    tool_names: tuple[str, ...]


# A prompt block renders a section of the system prompt (skills index, …) or None.
PromptBlock = Callable[[PromptContext], str | None]


def load_identity(home: Path) -> str:
    """SOUL.md if the user wrote one, else the built-in identity."""
    soul = home / "SOUL.md"
    try:
        text = soul.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, IsADirectoryError, PermissionError, UnicodeDecodeError):
        return DEFAULT_IDENTITY
    return text or DEFAULT_IDENTITY


def build_system_prompt(
    *,
    home: Path,
    ctx: PromptContext,
    memory_blocks: Sequence[str],
    blocks: Sequence[PromptBlock],
    now: datetime,
) -> str:
    """Render the frozen system prompt for a new session, in SPEC §7 order."""
    parts = [load_identity(home)]
    if ctx.tool_names:
        parts.append(TOOL_GUIDANCE)
    parts.extend(text.strip() for text in memory_blocks if text)
    for block in blocks:
        text = block(ctx)
        if text:
            parts.append(text.strip())
    parts.append(f"Conversation started: {now.strftime('%A, %Y-%m-%d %H:%M %Z').strip()}")
    hint = PLATFORM_HINTS.get(ctx.platform)
    if hint:
        parts.append(hint)
    return "\n\n".join(parts)
