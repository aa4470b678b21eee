"""The `memory` tool: add / replace / remove entries of the scope's MEMORY.md or USER.md.

Results are short (no echo of the entries on success, so the model does not re-save them)
and show the usage; failures say exactly what to do next: an over-cap write lists the
current entries so the model can consolidate in the same turn, an ambiguous `old_text`
lists previews of what it matched.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes.agent.memory_providers import MemoryLayers
from hermes.memory.history import UNKNOWN, Actor, tool_actor
from hermes.memory.notes import (
    ARCHIVE_FILE,
    NotesError,
    NotesState,
    NotesStore,
    open_notes,
    usage_chars,
    usage_text,
)
from hermes.memory.scan import describe, prepare, scan_text
from hermes.store.base import Store
from hermes.tools.registry import ToolContext, ToolError, tool

PREVIEW_CHARS = 80
NEAR_FULL = 0.8  # usage share from which every result asks the model to consolidate
ACTIONS = ("add", "replace", "remove")


@dataclass(frozen=True, slots=True)
class Operation:
    action: str
    content: str | None = None
    old_text: str | None = None


@dataclass
class Outcome:
    entries: list[str]
    added: int = 0
    replaced: int = 0
    removed: int = 0
    duplicates: int = 0
    superseded: list[str] = field(default_factory=list)  # older entries a labelled add replaced

    def summary(self) -> str:
        counts = ((self.added, "added"), (self.replaced, "replaced"), (self.removed, "removed"))
        parts = [f"{n} {word}" for n, word in counts if n]
        if self.duplicates:
            parts.append(f"{self.duplicates} already present (no duplicate added)")
        for old in self.superseded:
            parts.append(f"the older entry with the same label was replaced: {_preview(old)}")
        if not parts:
            return "Nothing changed."
        return "Entries: " + ", ".join(parts) + "."


def _preview(entry: str) -> str:
    flat = " ".join(entry.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _listing(entries: list[str]) -> str:
    if not entries:
        return "(no entries)"
    return "\n".join(f"[{i}] {e}" for i, e in enumerate(entries, start=1))


def _checked_content(content: str | None, action: str) -> str:
    text = (content or "").strip()
    if not text:
        raise NotesError(f"{action} needs non-empty `content` (the whole new entry)")
    threats = scan_text(text)
    if threats:
        raise NotesError(
            f"refused to store this entry: it looks like {describe(threats)}. Notes are read "
            "into every future system prompt, so they may not carry instructions to the model, "
            "secrets or hidden characters."
        )
    return text


def _locate(entries: list[str], old_text: str | None, action: str) -> int:
    """Index of the one entry `old_text` names (identical duplicates: the first)."""
    needle = (old_text or "").strip()
    if not needle:
        raise NotesError(
            f"{action} needs `old_text`: a short unique part of the entry to change."
            f" Current entries:\n{_listing(entries)}"
        )
    hits = [i for i, e in enumerate(entries) if needle in e]
    if not hits:  # forgive case and spacing differences before giving up
        folded = " ".join(needle.lower().split())
        hits = [i for i, e in enumerate(entries) if folded in " ".join(e.lower().split())]
    if not hits:
        raise NotesError(f"no entry contains {needle!r}. Current entries:\n{_listing(entries)}")
    if len({entries[i] for i in hits}) > 1:
        previews = "\n".join(f"[{i + 1}] {_preview(entries[i])}" for i in hits)
        raise NotesError(
            f"{needle!r} matches {len(hits)} different entries; use a longer, "
            f"unique part of the one you mean. Matches:\n{previews}"
        )
    return hits[0]


_LABEL = re.compile(r"([^\n:]{1,40}):\s+\S")


def entry_label(entry: str) -> str | None:
    """The label of a `Label: value` entry ("Home city: Lisbon" → "home city"), else None."""
    match = _LABEL.match(entry.strip())
    if match is None or "//" in entry[: match.end()]:
        return None
    return " ".join(match.group(1).casefold().split())


def apply_operations(entries: list[str], ops: list[Operation]) -> Outcome:
    """Apply operations in order to a copy of `entries`; any failure raises, nothing applied.

    An added `Label: value` entry supersedes an entry with the same label (the fact
    changed: "Employer: Acme" then "Employer: Globex"), so notes never hold both."""
    out = Outcome(entries=list(entries))
    for op in ops:
        if op.action == "add":
            text = _checked_content(op.content, "add")
            if text in out.entries:
                out.duplicates += 1
                continue
            label = entry_label(text)
            older = [i for i, e in enumerate(out.entries) if label and entry_label(e) == label]
            if older:
                out.superseded.append(out.entries[older[0]])
                out.entries[older[0]] = text
                for i in reversed(older[1:]):
                    out.superseded.append(out.entries.pop(i))
                continue
            out.entries.append(text)
            out.added += 1
        elif op.action == "replace":
            at = _locate(out.entries, op.old_text, "replace")
            text = _checked_content(op.content, "replace")
            if text in out.entries and out.entries[at] != text:
                del out.entries[at]  # the new text already exists: keep one copy
            else:
                out.entries[at] = text
            out.replaced += 1
        elif op.action == "remove":
            del out.entries[_locate(out.entries, op.old_text, "remove")]
            out.removed += 1
        else:
            raise NotesError(f"unknown action {op.action!r}; use add, replace or remove")
    return out


def check_budget(before: NotesState, after: list[str]) -> None:
    """Refuse a result over the cap, unless it shrinks a file that was already over it."""
    chars = usage_chars(after)
    if chars <= before.limit or chars < before.chars:
        return
    raise NotesError(
        f"{before.path.name} would be {usage_text(chars, before.limit)} — over its limit, so "
        "nothing was saved. Consolidate now, in this same turn: merge or shorten entries with "
        "`replace`, drop stale ones with `remove` (several at once with `operations`), then "
        f"add again. Current entries:\n{_listing(before.entries)}"
    )


def _operations(
    action: str | None,
    content: str | None,
    old_text: str | None,
    batch: list[dict[str, Any]] | None,
) -> list[Operation]:
    if batch:
        if action is not None:
            raise NotesError("give either `action` or `operations`, not both")
        ops = []
        for n, item in enumerate(batch, start=1):
            if not isinstance(item, dict) or item.get("action") not in ACTIONS:
                raise NotesError(f"operation {n} needs an `action` of add, replace or remove")
            unknown = set(item) - {"action", "content", "old_text"}
            if unknown:
                raise NotesError(f"operation {n} has unknown keys: {', '.join(sorted(unknown))}")
            ops.append(Operation(item["action"], item.get("content"), item.get("old_text")))
        return ops
    if action is None:
        raise NotesError("say what to do: `action` (add, replace, remove) or `operations`")
    return [Operation(action, content, old_text)]


def describe_operations(ops: list[Operation]) -> str:
    """What a call asked for, as a version's reason: `add: …; replace 'old': …`."""
    parts = []
    for op in ops:
        named = f" {op.old_text.strip()!r}" if op.old_text and op.action != "add" else ""
        content = f": {op.content.strip()}" if op.content and op.action != "remove" else ""
        parts.append(f"{op.action}{named}{content}")
    return "; ".join(parts)


def change_notes(
    notes: NotesStore,
    target: str,
    ops: list[Operation],
    actor: Actor = UNKNOWN,
    *,
    changes: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """Apply operations to one notes file under its lock, all or nothing; a short report.

    The operations are applied to the text as it is under the lock, not to the snapshot a
    turn started with, so a change made meanwhile (a revert, a hand edit) is kept. Entries
    that left and arrived are appended to `changes` as ("remove"|"add", entry)."""
    if actor.reason is None:
        actor = actor.because(describe_operations(ops))
    with notes.locked(target) as state:
        outcome = apply_operations(state.entries, ops)
        changed = outcome.entries != state.entries
        backup = None
        if changed:
            check_budget(state, outcome.entries)
            leaving = [e for e in state.entries if e not in outcome.entries]
            if leaving:
                why = "superseded" if outcome.superseded else "removed"
                _archive(notes, state, leaving, "replaced" if outcome.replaced else why)
            arriving = [e for e in outcome.entries if e not in state.entries]
            backup = notes.save(state, outcome.entries, actor)
            if changes is not None:
                changes.extend([("remove", e) for e in leaving] + [("add", e) for e in arriving])
    result: dict[str, Any] = {
        "success": True,
        "target": target,
        "message": outcome.summary(),
        "usage": usage_text(usage_chars(outcome.entries), state.limit),
        "entry_count": len(outcome.entries),
    }
    if changed:
        result["note"] = "Saved. This update is complete — do not repeat it."
    chars = usage_chars(outcome.entries)
    if chars >= NEAR_FULL * state.limit:
        result["warning"] = (
            f"{state.path.name} is {round(chars * 100 / state.limit)}% full. Consolidate soon: "
            "merge related entries and drop stale ones (entries that leave are kept in "
            f"memories/{ARCHIVE_FILE}, which session_search also searches)."
        )
    if backup is not None:
        result["backup"] = (
            f"{state.path.name} was not valid UTF-8 text; the original was kept "
            f"as {backup.name} before this write."
        )
    return result


def _archive(notes: NotesStore, state: NotesState, leaving: list[str], why: str) -> None:
    try:
        notes.archive(state, leaving, why)
    except OSError as exc:
        raise NotesError(
            f"nothing was saved: the entries leaving {state.path.name} could not be archived "
            f"in memories/{ARCHIVE_FILE} ({exc.strerror or exc})"
        ) from None


def _joined(summary: str | None, ops: list[Operation]) -> str:
    """The reason recorded for a tool call: what it did, after the caller's summary."""
    done = describe_operations(ops)
    return f"{summary.strip()} — {done}" if summary and summary.strip() else done


def notes_for(ctx: ToolContext) -> NotesStore:
    store = ctx.services.find(Store)  # type: ignore[type-abstract]
    return open_notes(ctx.settings, ctx.scope, store)


def _write(
    ctx: ToolContext, target: str, ops: list[Operation], changes: list[tuple[str, str]]
) -> dict[str, Any]:
    if any(op.content for op in ops):
        prepare(ctx.settings)  # the meaning stage's model, once per process
    actor = tool_actor(ctx.platform, ctx.session_id, ctx.turn, _joined(ctx.reason, ops))
    return change_notes(notes_for(ctx), target, ops, actor, changes=changes)


@tool(name="memory")
async def memory_tool(
    ctx: ToolContext,
    target: Literal["memory", "user"],
    action: Literal["add", "replace", "remove"] | None = None,
    content: str | None = None,
    old_text: str | None = None,
    operations: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Save durable facts to your notes; every future conversation's system prompt shows them. Save: the user's preferences, corrections of your mistakes, facts about the user and their environment that will matter again. Skip: trivia, task progress, raw data, anything easy to look up again (session_search finds past conversations). Write compact, self-contained entries; facts that change (where the user lives, their job, a current project) as `Label: value`; a later entry with the same label replaces the older one. When the notes are full, consolidate (merge, shorten, remove stale entries) in the same call with `operations`.

    Args:
        target: 'user' for who the user is (profile, preferences, circumstances), 'memory' for your working notes (environment, conventions, lessons learned).
        content: the whole new entry (add, replace).
        old_text: a short unique substring of the entry to replace or remove.
        operations: several changes applied together, all or nothing: objects with action, content and old_text as above.
    """
    changes: list[tuple[str, str]] = []
    try:
        ops = _operations(action, content, old_text, operations)
        result = await asyncio.to_thread(_write, ctx, target, ops, changes)
    except NotesError as exc:
        raise ToolError(str(exc)) from None
    layers = ctx.services.find(MemoryLayers)
    if layers is not None:  # external providers mirror the notes (a replace: remove + add)
        for change, entry in changes:
            await layers.on_memory_write(ctx.scope, target, change, entry)
    return result
