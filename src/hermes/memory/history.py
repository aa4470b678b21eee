"""Memory you can audit: every change to a scope's notes, SOUL.md and skills becomes a version.

`History.record` is the one way a change is recorded, whoever makes it (the memory tool, the
background review, the API, the CLI, skill writes, a revert); the caller says who it is with
an `Actor`. A change made by hand in an editor is noticed the next time the text is read
under its lock (`History.audit`): the text found differs from the last version's, so an
`editor` version is recorded first and nothing is ever attributed to the wrong hand.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass, replace
from typing import Any, Literal

from hermes.store.base import NoteChange, NoteHistoryStore, NoteVersion, Store, StoreError

log = logging.getLogger(__name__)

ActorKind = Literal["tool", "review", "api", "cli", "editor", "baseline", "unknown"]
REASON_CHARS = 1_000
NOTE_TARGETS = ("memory", "user")
SKILL_PREFIX = "skill:"
REVIEW_PLATFORMS = frozenset({"memory-review", "skill-review"})


@dataclass(frozen=True, slots=True)
class Actor:
    """Who makes a change and why: the tool in session S at message N, the review after
    session S, an API key by name, the CLI, or a hand edit found later."""

    kind: ActorKind
    session_id: str | None = None
    turn: int | None = None
    key_name: str | None = None
    reason: str | None = None

    def because(self, reason: str | None) -> Actor:
        return replace(self, reason=reason)


CLI = Actor("cli")
EDITOR = Actor("editor", reason="changed outside Hermes (found when the text was next read)")
UNKNOWN = Actor("unknown")


def api_actor(key_name: str | None) -> Actor:
    """The HTTP API, named by the caller's scoped key (None: the server key)."""
    return Actor("api", key_name=key_name or "server key")


def tool_actor(
    platform: str, session_id: str, turn: int | None, reason: str | None = None
) -> Actor:
    """The agent's own tool call, or the background review when that is where it runs."""
    if platform in REVIEW_PLATFORMS:
        return Actor("review", session_id=session_id, reason=reason)
    return Actor("tool", session_id=session_id, turn=turn, reason=reason)


def is_target(target: str) -> bool:
    return target in NOTE_TARGETS or target == "soul" or _skill_name(target) is not None


def _skill_name(target: str) -> str | None:
    name = target[len(SKILL_PREFIX) :] if target.startswith(SKILL_PREFIX) else ""
    return name or None


class History:
    """One scope's versions, bound to the store and the retention setting."""

    def __init__(self, versions: NoteHistoryStore, scope: str, keep: int) -> None:
        self.versions = versions
        self.scope = scope
        self.keep = keep
        self._audited: dict[str, str] = {}
        """Target → the text its last audit found, for the write in the same lock hold."""

    def record(
        self, target: str, before: str, after: str, actor: Actor, *, reverts: int | None = None
    ) -> NoteVersion | None:
        """Record one change (call under the target's lock, after the write); None when the
        text did not change. A failing database is logged: the change itself is made, and the
        next audit records it (as `editor`), so it is never silently missing."""
        if before == after:
            return None
        try:
            if self._audited.pop(target, None) != before:  # not audited under this lock
                self.audit(target, before)
            change = NoteChange(
                target=target,
                before=before,
                after=after,
                actor=actor.kind,
                reason=_clip(actor.reason),
                session_id=actor.session_id,
                turn=actor.turn,
                key_name=actor.key_name,
                reverts=reverts,
            )
            return self.versions.add_version(self.scope, change, keep=self.keep)
        except StoreError as exc:
            log.warning("memory history: %s of scope %s not recorded: %s", target, self.scope, exc)
            return None

    def audit(self, target: str, text: str, *, held: bool = False) -> NoteVersion | None:
        """Compare the text found with the last version; record what changed by hand (or,
        the first time, what was there before history began). Call under the lock; `held`:
        the caller keeps the lock for a write and calls `release` when it lets go, so that
        write's `record` need not read the last version again."""
        try:
            found = self._found(target, text)
        except StoreError as exc:  # the notes stay usable; the next audit catches up
            log.warning("memory history: %s of scope %s not audited: %s", target, self.scope, exc)
            return None
        if held:
            self._audited[target] = text
        return found

    def _found(self, target: str, text: str) -> NoteVersion | None:
        last = self.versions.latest_version(self.scope, target)
        if last is None and text:
            first = NoteChange(target, "", text, "baseline", reason="found when history began")
            return self.versions.add_version(self.scope, first, keep=self.keep)
        if last is not None and last.after != text:
            edit = NoteChange(target, last.after, text, EDITOR.kind, reason=EDITOR.reason)
            return self.versions.add_version(self.scope, edit, keep=self.keep)
        return None

    def release(self, target: str) -> None:
        """The lock of `target` is let go: what its audit found may be stale from now on."""
        self._audited.pop(target, None)


def history_for(store: Store | None, scope: str, keep: int) -> History | None:
    """The scope's history when the store keeps one (both backends do)."""
    versions = getattr(store, "note_history", None) if store is not None else None
    return History(versions, scope, keep) if versions is not None else None


def forget_history(store: Store, scope: str) -> int:
    """Forget every version of `scope` (the "forget a user" feature); returns how many."""
    versions = getattr(store, "note_history", None)
    return versions.forget_versions(scope) if versions is not None else 0


def unified_diff(version: NoteVersion) -> str:
    name = _file_name(version.target)
    return "".join(
        difflib.unified_diff(
            version.before.splitlines(keepends=True),
            version.after.splitlines(keepends=True),
            fromfile=f"{name} (before #{version.id})",
            tofile=f"{name} (after #{version.id})",
        )
    )


def _file_name(target: str) -> str:
    names = {"memory": "MEMORY.md", "user": "USER.md", "soul": "SOUL.md"}
    return names.get(target) or f"skills/{_skill_name(target)}/SKILL.md"


def summary(version: NoteVersion) -> dict[str, Any]:
    """A version as a list shows it: who, when, why, where from; no texts."""
    out: dict[str, Any] = {
        "id": version.id,
        "target": version.target,
        "actor": version.actor,
        "at": version.at,
    }
    optional = {
        "reason": version.reason,
        "session_id": version.session_id,
        "turn": version.turn,
        "key": version.key_name,
        "reverts": version.reverts,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    return out


def detail(version: NoteVersion) -> dict[str, Any]:
    return {
        **summary(version),
        "before": version.before,
        "after": version.after,
        "diff": unified_diff(version),
    }


def _clip(reason: str | None) -> str | None:
    if not reason:
        return None
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"
