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
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
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
        return NotesState(target, path, parse_entries(text), self.limit(target), malformed)

    @contextlib.contextmanager
    def locked(self, target: str) -> Iterator[NotesState]:
        """Hold the lock of one file; yields its current state (write with `save`)."""
        path = self.path(target)
        with file_lock(path):
            yield self.read(target)

    def save(self, state: NotesState, entries: list[str]) -> Path | None:
        """Write entries (call inside `locked`); returns the backup made of a malformed file."""
        saved = backup(state.path) if state.malformed and state.path.exists() else None
        atomic_write(state.path, serialize(entries))
        state.entries = list(entries)
        state.malformed = False
        return saved
