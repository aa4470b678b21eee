"""The texts whose history is kept, each read and written under its own lock: a scope's
notes (MEMORY.md, USER.md), the owner's SOUL.md and the owner's skills (`skill:NAME`).

A revert or an audit goes through these, so it takes the same lock as every other writer
of that text and never races the agent.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from hermes.config.settings import Settings
from hermes.errors import HermesError
from hermes.fileio import atomic_write, file_lock
from hermes.memory.history import SKILL_PREFIX, Actor, History, history_for
from hermes.memory.notes import NotesState, NotesStore, open_notes, parse_entries, read_text
from hermes.store.base import DEFAULT_SCOPE, NoteVersion, Store

SOUL_FILE = "SOUL.md"


class TargetError(HermesError, ValueError):
    """The target does not exist in this scope, or the store keeps no history."""


class Target(Protocol):
    name: str

    def locked(self) -> contextlib.AbstractContextManager[str]:
        """Hold the text's lock; yields the text as stored now (hand edits recorded)."""
        ...

    def write(self, text: str, actor: Actor, *, reverts: int | None = None) -> NoteVersion | None:
        """Store `text` (inside `locked`) and record the version."""
        ...


class NotesTarget:
    def __init__(self, notes: NotesStore, name: str) -> None:
        self.notes = notes
        self.name = name
        self._state: NotesState | None = None

    @contextlib.contextmanager
    def locked(self) -> Iterator[str]:
        with self.notes.locked(self.name) as state:
            self._state = state
            try:
                yield state.text
            finally:
                self._state = None

    def write(self, text: str, actor: Actor, *, reverts: int | None = None) -> NoteVersion | None:
        assert self._state is not None, "write inside locked()"
        self.notes.save(self._state, parse_entries(text), actor, reverts=reverts)
        history = self.notes.history
        return history.versions.latest_version(history.scope, self.name) if history else None


class FileTarget:
    """SOUL.md or a skill's SKILL.md: a plain file, recorded through `History`."""

    def __init__(self, name: str, history: History, lock: Path, path: Path | None) -> None:
        self.name = name
        self.history = history
        self._lock = lock
        self.path = path
        self._text = ""

    @contextlib.contextmanager
    def locked(self) -> Iterator[str]:
        with file_lock(self._lock):
            self._text = read_text(self.path)[0] if self.path is not None else ""
            self.history.audit(self.name, self._text, held=True)
            try:
                yield self._text
            finally:
                self.history.release(self.name)

    def write(self, text: str, actor: Actor, *, reverts: int | None = None) -> NoteVersion | None:
        if self.path is None:
            raise TargetError(f"{self.name} has no file to write")
        if text:
            atomic_write(self.path, text)
        elif self.path.name == SOUL_FILE:
            self.path.unlink(missing_ok=True)
        else:  # a skill's text gone: the skill is deleted, as `skill_manage delete` would
            shutil.rmtree(self.path.parent, ignore_errors=True)
        return self.history.record(self.name, self._text, text, actor, reverts=reverts)


def open_target(settings: Settings, store: Store, scope: str, name: str) -> Target:
    """The target `name` of `scope`: memory | user | soul | skill:NAME."""
    keep = settings.memory.history_retention
    history = history_for(store, scope, keep)
    if history is None:
        raise TargetError("this store keeps no memory history")
    if name in ("memory", "user"):
        return NotesTarget(open_notes(settings, scope, store), name)
    if scope != DEFAULT_SCOPE and (name == "soul" or name.startswith(SKILL_PREFIX)):
        raise TargetError(f"{name} belongs to the owner; an end user has only memory and user")
    if name == "soul":
        return FileTarget(
            name, history, settings.home / f"{SOUL_FILE}.lock", settings.home / SOUL_FILE
        )
    if name.startswith(SKILL_PREFIX) and len(name) > len(SKILL_PREFIX):
        from hermes.skills.library import SKILL_FILE
        from hermes.skills.store import library_for

        library = library_for(settings)
        skill = name[len(SKILL_PREFIX) :]
        found = library.find(skill)
        problem = library.problem_for(skill) if found is None else None
        path = (
            found.path
            if found is not None
            else Path(problem.path)
            if problem is not None
            else library.directory_for(skill, None) / SKILL_FILE
        )
        return FileTarget(name, history, library.root / ".lock", path)
    raise TargetError(f"unknown target {name!r}; use memory, user, soul or skill:NAME")


def target_names(settings: Settings, scope: str) -> list[str]:
    """Every target of `scope`: its notes; for the owner also SOUL.md and each skill."""
    names = ["memory", "user"]
    if scope == DEFAULT_SCOPE:
        from hermes.skills.store import library_for

        names.append("soul")
        names += [SKILL_PREFIX + s.name for s in library_for(settings).skills()]
    return names


def audit(settings: Settings, store: Store, scope: str, target: str | None = None) -> None:
    """Record hand edits made since the last version (before history is shown or used)."""
    for name in [target] if target is not None else target_names(settings, scope):
        with open_target(settings, store, scope, name).locked():
            pass
