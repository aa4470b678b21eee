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
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from hermes import fileio
from hermes.config.settings import MemorySettings
from hermes.fileio import atomic_write
from hermes.scopes import scope_root

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


class NotesError(Exception):
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
        return "", False
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
    """The two notes files of one scope; every method reads the disk (no stale cache)."""

    def __init__(self, home: Path, scope: str, settings: MemorySettings) -> None:
        self.scope = scope
        self.directory = scope_root(home, scope) / "memories"
        self._limits = {"memory": settings.memory_char_limit, "user": settings.user_char_limit}

    def path(self, target: str) -> Path:
        if target not in FILES:
            raise NotesError(f"unknown target {target!r}; use 'memory' or 'user'")
        return self.directory / FILES[target]

    def limit(self, target: str) -> int:
        return self._limits[target]

    def read(self, target: str) -> NotesState:
        path = self.path(target)
        text, malformed = read_text(path)
        entries = parse_entries(text)
        state = NotesState(target, path, entries, self.limit(target), malformed)
        dates = _read_dates(_dates_path(path))
        state.written = {e: dates[e] for e in entries if e in dates}
        return state

    @contextlib.contextmanager
    def locked(self, target: str) -> Iterator[NotesState]:
        """Hold the lock of one file; yields its current state (write with `save`)."""
        path = self.path(target)
        with file_lock(path):
            yield self.read(target)

    def save(self, state: NotesState, entries: list[str]) -> Path | None:
        """Write entries (call inside `locked`); returns the backup made of a malformed file."""
        saved = backup(state.path) if state.malformed and state.path.exists() else None
        today, before = today_utc(), set(state.entries)
        written = {e: d for e in entries if (d := state.written.get(e) or _new(e, before, today))}
        atomic_write(state.path, serialize(entries))
        atomic_write(_dates_path(state.path), json.dumps(written, ensure_ascii=False, indent=0))
        state.entries = list(entries)
        state.written = written
        state.malformed = False
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
        with file_lock(path):
            old, _ = read_text(path)
            atomic_write(path, serialize([*parse_entries(old), *blocks]))
        return path

    def search_archive(self, words: list[str], limit: int = 3) -> list[str]:
        """Archived entries holding the most of `words` (lowercase), best first."""
        text, _ = read_text(self.archive_path)
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
        with file_lock(path):
            items = [*self._failures(), {"date": today_utc(), "reason": reason[:500]}]
            atomic_write(path, json.dumps(items[-5:], ensure_ascii=False))

    def take_failures(self) -> list[dict[str, str]]:
        """The recorded failures, forgotten once taken (they go into one system prompt)."""
        path = self._failures_path
        with file_lock(path):
            items = self._failures()
            path.unlink(missing_ok=True)
        return items

    def _failures(self) -> list[dict[str, str]]:
        try:
            items = json.loads(self._failures_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


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


def _read_dates(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
