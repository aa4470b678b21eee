"""The notes block of the system prompt: a snapshot of MEMORY.md and USER.md.

The agent renders the system prompt once per session and stores it on the session row, so
this snapshot is frozen for the session (a stable prefix for prompt caching) while writes
land on disk at once; the next session renders the new state. Entries are scanned again
here because the files may have been edited by hand: a hit is replaced in the prompt only,
never deleted from the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes.config.settings import Settings
from hermes.memory.notes import DELIMITER, NotesError, NotesState, NotesStore, open_notes
from hermes.memory.scan import scan_text
from hermes.store.base import Store

RULE = "═" * 46
TITLES = {"memory": "MEMORY (your personal notes)", "user": "USER PROFILE (who the user is)"}
GUIDANCE = (
    "Your notes below persist across conversations (a snapshot taken when this conversation "
    "started). Keep them current with the memory tool; to recall details of past "
    "conversations, use session_search before asking the user to repeat themselves."
)


FAILED_SAVES = (
    "⚠ These memory saves failed in the background and nothing was stored; tell the user "
    "early in your reply what could not be remembered, and save it now if it still matters:"
)


def _safe_entry(entry: str, filename: str) -> str:
    threats = scan_text(entry)
    if not threats:
        return entry
    names = ", ".join(sorted({t.name for t in threats}))
    return (
        f"[BLOCKED: a {filename} entry contained {names}; it is not shown. Use the memory "
        "tool (action=remove) to delete the original.]"
    )


def _dated(state: NotesState, shown: str, entry: str) -> str:
    """The entry as the prompt shows it: headed by the date it was written, when known."""
    written = state.written.get(entry)
    return f"(written {written}) {shown}" if written else shown


def _truncate(text: str, cap: int) -> str:
    """Keep the head (70%) and tail (20%) of an oversized block, marking the cut."""
    if len(text) <= cap:
        return text
    head, tail = int(cap * 0.7), int(cap * 0.2)
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut:,} characters of notes not shown …]\n{text[-tail:]}"


def render_notes(state: NotesState) -> str | None:
    """One notes file as a prompt block, or None when it has no entries."""
    if not state.entries:
        return None
    over = " ⚠ OVER BUDGET" if state.chars > state.limit else ""
    header = f"{TITLES[state.target]} [{state.usage}]{over}"
    body = DELIMITER.join(
        _dated(state, _safe_entry(e, state.path.name), e) for e in dict.fromkeys(state.entries)
    )
    body = _truncate(body, max(2 * state.limit, 4000))
    return f"{RULE}\n{header}\n{RULE}\n{body}"


def _render_readable(notes: Any, target: str) -> str | None:
    """One notes file's block; an unreadable file is left out (logged, and reported by
    /health through `hermes.memory.health`) so the turn goes on without it."""
    try:
        return render_notes(notes.read(target))
    except NotesError:
        return None


def render_scope(
    home: Path, scope: str, settings: Settings, store: Store | None = None
) -> str | None:
    """Both notes of a scope as the system-prompt block (None if both are empty); `store`
    holds them when it keeps shared documents (PostgreSQL), else they are files."""
    notes = (
        open_notes(settings, scope, store) if store else NotesStore(home, scope, settings.memory)
    )
    blocks = [b for t in ("memory", "user") if (b := _render_readable(notes, t))]
    failures = notes.take_failures()
    if failures:
        lines = "\n".join(f"- {f.get('date')}: {f.get('reason')}" for f in failures)
        blocks.append(f"{FAILED_SAVES}\n{lines}")
    if not blocks:
        return None
    return "\n\n".join([GUIDANCE, *blocks])
