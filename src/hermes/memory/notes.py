"""Curated notes per scope: MEMORY.md (the agent's notes) and USER.md (who the user is).

Plain text the user may edit by hand: entries separated by a line holding `§`. Every write
re-reads the file under a lock (a thread lock for this process, `fcntl.flock` on a side
`.lock` file for other processes), applies the change and replaces the file atomically
(temp file + fsync + rename), so concurrent writers never lose each other's entries. A file
that is not valid UTF-8 text is read as best it can be and copied to `<name>.bak.<time>`
before it is first overwritten: nothing is dropped silently.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from hermes import fileio
from hermes.config.settings import MemorySettings, Settings
from hermes.errors import HermesError
from hermes.fileio import atomic_write
from hermes.memory.health import record_readable, record_unreadable
from hermes.memory.history import UNKNOWN, Actor, History, history_for
from hermes.scopes import scope_root
from hermes.store.base import DocumentEdit, DocumentStore, Store
from hermes.text import string_map

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the thread lock still guards this process
    fcntl = None  # type: ignore[assignment]

Target = Literal["memory", "user"]
FILES: dict[str, str] = {"memory": "MEMORY.md", "user": "USER.md"}
DELIMITER = "\n§\n"
_SPLIT = re.compile(r"^[ \t]*§[ \t]*$", re.MULTILINE)
# A `§` line inside an entry would split it in two when the file is read back: on write it
# gains a backslash (`\§`, and `\§` becomes `\\§`), on read one backslash is taken off.
_ESCAPE = re.compile(r"^([ \t]*)(\\*)§([ \t]*)$", re.MULTILINE)
_UNESCAPE = re.compile(r"^([ \t]*)\\(\\*)§([ \t]*)$", re.MULTILINE)


class NotesError(HermesError):
    """A change the notes refused; the message is meant for the model or the user."""


def parse_entries(text: str) -> list[str]:
    """Entries of a notes file: split on `§` lines, stripped, empty ones dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [_UNESCAPE.sub(r"\1\2§\3", e.strip()) for e in _SPLIT.split(text) if e.strip()]


def escape_entry(entry: str) -> str:
    """An entry as written to the file: its own `§` lines escaped so they do not split it."""
    return _ESCAPE.sub(r"\1\\\2§\3", entry.replace("\r\n", "\n").replace("\r", "\n"))


def serialize(entries: list[str]) -> str:
    return DELIMITER.join(escape_entry(e) for e in entries) + "\n" if entries else ""


def usage_chars(entries: list[str]) -> int:
    return len(DELIMITER.join(entries))


def usage_text(chars: int, limit: int) -> str:
    """`63% — 1,390/2,200 chars`."""
    return f"{round(chars * 100 / limit)}% — {chars:,}/{limit:,} chars"


@dataclass
class NotesState:
    target: str
    path: Path
    entries: list[str]
    limit: int
    malformed: bool = False
    written: dict[str, str] = field(default_factory=dict)
    """Entry text → the UTC date (YYYY-MM-DD) it was written; hand-written entries have none."""
    text: str = ""
    """The file as read: the text a recorded version starts from."""

    @property
    def chars(self) -> int:
        return usage_chars(self.entries)

    @property
    def usage(self) -> str:
        return usage_text(self.chars, self.limit)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Exclusive lock on `path` across threads and processes (lock file beside it)."""
    with fileio.file_lock(path.parent / (path.name + ".lock")):
        yield


def read_text(path: Path) -> tuple[str, bool]:
    """The file's text and whether it is malformed (not UTF-8, or holding NUL bytes)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        record_readable(str(path))
        return "", False
    except OSError as exc:  # a directory, a symlink loop, no permission
        record_unreadable(str(path), exc.strerror or type(exc).__name__)
        raise NotesError(
            f"{path.name} cannot be read ({exc.strerror or exc}); the notes are unavailable "
            f"until {path} is a readable file again"
        ) from None
    record_readable(str(path))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace").replace("\x00", ""), True
    if "\x00" in text:
        return text.replace("\x00", ""), True
    return text, False


def backup(path: Path) -> Path:
    """Copy `path` to `<name>.bak.<UTC time>` (never overwriting an earlier backup)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = path.with_name(f"{path.name}.bak.{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.bak.{stamp}-{n}")
    shutil.copy2(path, target)
    return target


class NotesStore:
    """The two notes files of one scope; every method reads the disk (no stale cache).

    With a `history`, every write is recorded as a version and every read compares the file
    with the last version (under the lock), so a hand edit is recorded as `editor`."""

    history: History | None = None

    def __init__(
        self, home: Path, scope: str, settings: MemorySettings, history: History | None = None
    ) -> None:
        self.scope = scope
        self.directory = scope_root(home, scope) / "memories"
        self.where = str(self.directory)
        self._limits = {"memory": settings.memory_char_limit, "user": settings.user_char_limit}
        self.history = history

    def path(self, target: str) -> Path:
        if target not in FILES:
            raise NotesError(f"unknown target {target!r}; use 'memory' or 'user'")
        return self.directory / FILES[target]

    def limit(self, target: str) -> int:
        return self._limits[target]

    def read(self, target: str) -> NotesState:
        """The note as it is now (with a history: read under the lock, hand edits recorded)."""
        if self.history is None:
            return self._state(target)
        with self.locked(target) as state:
            return state

    def _state(self, target: str) -> NotesState:
        path = self.path(target)
        text, malformed = self._read(path)
        entries = parse_entries(text)
        state = NotesState(target, path, entries, self.limit(target), malformed, text=text)
        dates = string_map(self._read(_dates_path(path))[0])
        state.written = {e: dates[e] for e in entries if e in dates}
        return state

    @contextlib.contextmanager
    def locked(self, target: str) -> Iterator[NotesState]:
        """Hold the lock of one file; yields its current state (write with `save`)."""
        path = self.path(target)
        with self._lock(path):
            state = self._state(target)
            if self.history is None:
                yield state
                return
            self.history.audit(target, state.text, held=True)
            try:
                yield state
            finally:
                self.history.release(target)

    def save(
        self,
        state: NotesState,
        entries: list[str],
        actor: Actor = UNKNOWN,
        *,
        reverts: int | None = None,
    ) -> Path | None:
        """Write entries (call inside `locked`) and record the version `actor` made; returns
        the backup made of a malformed file."""
        saved = self._backup(state.path) if state.malformed else None
        today, before = today_utc(), set(state.entries)
        written = {e: d for e in entries if (d := state.written.get(e) or _new(e, before, today))}
        text = serialize(entries)
        self._write(state.path, text)
        self._write(_dates_path(state.path), json.dumps(written, ensure_ascii=False, indent=0))
        if self.history is not None:
            self.history.record(state.target, state.text, text, actor, reverts=reverts)
        state.entries = list(entries)
        state.written = written
        state.malformed = False
        state.text = text
        return saved

    @property
    def archive_path(self) -> Path:
        return self.directory / ARCHIVE_FILE

    def archive(self, state: NotesState, entries: list[str], why: str) -> Path:
        """Append entries leaving `state`'s file to ARCHIVE.md (plain text, `§`-separated,
        each headed by when and why it left), so a consolidation never loses a fact."""
        today = today_utc()
        blocks = []
        for entry in entries:
            written = state.written.get(entry)
            since = f"; written {written}" if written else ""
            blocks.append(f"[archived {today} from {state.path.name} ({why}){since}]\n{entry}")
        path = self.archive_path
        with self._lock(path):
            old, _ = self._read(path)
            self._write(path, serialize([*parse_entries(old), *blocks]))
        return path

    def search_archive(self, words: list[str], limit: int = 3) -> list[str]:
        """Archived entries holding the most of `words` (lowercase), best first."""
        text, _ = self._read(self.archive_path)
        wanted = {w.lower() for w in words if w}
        scored = []
        for n, entry in enumerate(parse_entries(text)):
            have = set(_WORDS.findall(entry.lower()))
            hits = sum(any(h.startswith(w) for h in have) for w in wanted)
            if hits:
                scored.append((-hits, -n, entry))
        return [entry for _, _, entry in sorted(scored)[:limit]]

    @property
    def _failures_path(self) -> Path:
        return self.directory / ".save-failures.json"

    def record_failure(self, reason: str) -> None:
        """Remember a memory write that a background pass could not make, for the user."""
        path = self._failures_path
        with self._lock(path):
            items = [*self._failures(), {"date": today_utc(), "reason": reason[:500]}]
            self._write(path, json.dumps(items[-5:], ensure_ascii=False))

    def take_failures(self) -> list[dict[str, str]]:
        """The recorded failures, forgotten once taken (they go into one system prompt)."""
        path = self._failures_path
        with self._lock(path):
            items = self._failures()
            if items:
                self._remove(path)
        return items

    def _failures(self) -> list[dict[str, str]]:
        try:
            items = json.loads(self._read(self._failures_path)[0] or "[]")
        except ValueError:
            return []
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def read_raw(self, target: str) -> tuple[str, bool]:
        """The note's text as stored and whether it is malformed (`hermes memory edit`)."""
        return self._read(self.path(target))

    def replace_raw(self, target: str, expected: str, text: str, actor: Actor = UNKNOWN) -> bool:
        """Store `text` if the note still reads `expected` (False: it changed meanwhile)."""
        path = self.path(target)
        with self._lock(path):
            now, malformed = self._read(path)
            if now != expected:
                return False
            if malformed:
                self._backup(path)
            self._write(path, text)
            if self.history is not None:
                self.history.record(target, now, text, actor)
        return True

    def erase(self) -> None:
        """Remove every note of the scope (its notes, dates, archive)."""
        if self.directory.exists():
            shutil.rmtree(self.directory)
        with contextlib.suppress(OSError):
            self.directory.parent.rmdir()  # the user's directory, if nothing else lives there

    # -- storage: files here; `DatabaseNotes` keeps the same texts as database documents --

    def _read(self, path: Path) -> tuple[str, bool]:
        return read_text(path)

    def _write(self, path: Path, text: str) -> None:
        atomic_write(path, text)

    def _lock(self, path: Path) -> contextlib.AbstractContextManager[None]:
        return file_lock(path)

    def _backup(self, path: Path) -> Path | None:
        return backup(path) if path.exists() else None

    def _remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)


def open_notes(settings: Settings, scope: str, store: Store | None = None) -> NotesStore:
    """The scope's notes: documents in the database when the store keeps them (PostgreSQL,
    shared by every replica), else the files under `$HERMES_HOME`."""
    history = history_for(store, scope, settings.memory.history_retention)
    if store is not None and store.documents is not None:
        return DatabaseNotes(store.documents, scope, settings.memory, history)
    return NotesStore(settings.home, scope, settings.memory, history)


class DatabaseNotes(NotesStore):
    """The same notes (entries, dates, archive, caps, checks) as documents named like the
    files (`memories/MEMORY.md`, …) in the shared database; a document's lock is the note's
    lock across every replica, and a write inside it lands when the lock is let go."""

    def __init__(
        self,
        documents: DocumentStore,
        scope: str,
        settings: MemorySettings,
        history: History | None = None,
    ) -> None:
        self.scope = scope
        self.history = history
        self.directory = Path("memories")
        self.where = "the database (store.url)"
        self._limits = {"memory": settings.memory_char_limit, "user": settings.user_char_limit}
        self._documents = documents
        self._open = threading.local()

    def _edits(self) -> dict[str, DocumentEdit]:
        edits: dict[str, DocumentEdit] | None = getattr(self._open, "edits", None)
        if edits is None:
            edits = self._open.edits = {}
        return edits

    def _read(self, path: Path) -> tuple[str, bool]:
        edit = self._edits().get(str(path))
        if edit is not None:
            current = edit.new_text if edit.new_text is not None else edit.text
            return current or "", False
        return self._documents.read_document(self.scope, str(path)) or "", False

    def _write(self, path: Path, text: str) -> None:
        edit = self._edits().get(str(path))
        if edit is not None:
            edit.new_text = text
            return
        with self._documents.edit_document(self.scope, str(path)) as fresh:
            assert fresh is not None
            fresh.new_text = text

    @contextlib.contextmanager
    def _lock(self, path: Path) -> Iterator[None]:
        name = str(path)
        with self._documents.edit_document(self.scope, name) as edit:
            assert edit is not None  # only skip_locked edits come back empty
            self._edits()[name] = edit
            try:
                yield
            finally:
                self._edits().pop(name, None)

    def _backup(self, path: Path) -> Path | None:
        return None  # a document is always text: never malformed

    def _remove(self, path: Path) -> None:
        edit = self._edits().get(str(path))
        if edit is not None:
            edit.new_text = None
        self._documents.delete_documents(self.scope, [str(path)])

    def erase(self) -> None:
        names = self._documents.list_documents(self.scope, "memories/")
        self._documents.delete_documents(self.scope, names)


ARCHIVE_FILE = "ARCHIVE.md"
_WORDS = re.compile(r"\w+", re.UNICODE)


def _new(entry: str, before: set[str], today: str) -> str | None:
    """Today for an entry this write adds; None keeps a hand-written entry undated."""
    return None if entry in before else today


def today_utc() -> str:
    return datetime.now(UTC).date().isoformat()


def _dates_path(path: Path) -> Path:
    """Where the write dates of a notes file live: beside it, so the notes stay plain."""
    return path.with_name(f".{path.name}.dates.json")
