"""SQLite side of the `NoteHistoryStore` contract, and the SQL both backends share.

One row per version: the whole text before and after (a note is at most a few KB, so a
version costs about twice its note; see bench/memory_history.py), who changed it and why.
Each target keeps its newest `keep` versions; older ones fold into one `baseline` version
whose text before is the oldest one folded, so the chain of texts stays unbroken.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from hermes.store.base import NoteChange, NoteVersion, StoreError

M012_NOTE_VERSIONS = """
CREATE TABLE note_versions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    target TEXT NOT NULL,
    actor TEXT NOT NULL,
    at REAL NOT NULL,
    before TEXT NOT NULL,
    after TEXT NOT NULL,
    reason TEXT,
    session_id TEXT,
    turn INTEGER,
    key_name TEXT,
    reverts INTEGER
);
CREATE INDEX note_versions_target ON note_versions (scope, target, id);
"""

# The SQL both backends run; `?` placeholders (the PostgreSQL store swaps them for `%s`).
COLUMNS = "id, scope, target, actor, at, before, after, reason, session_id, turn, key_name, reverts"
INSERT = (
    "INSERT INTO note_versions (scope, target, actor, at, before, after, reason, session_id, "
    "turn, key_name, reverts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
)
COUNT = "SELECT count(*) FROM note_versions WHERE scope = ? AND target = ?"
OLDEST = "SELECT id, before FROM note_versions WHERE scope = ? AND target = ? ORDER BY id LIMIT ?"
FOLD = (
    "UPDATE note_versions SET actor = 'baseline', before = ?, reason = ?, session_id = NULL, "
    "turn = NULL, key_name = NULL, reverts = NULL WHERE id = ?"
)
DROP_FOLDED = "DELETE FROM note_versions WHERE scope = ? AND target = ? AND id < ?"
LATEST = (
    f"SELECT {COLUMNS} FROM note_versions WHERE scope = ? AND target = ? ORDER BY id DESC LIMIT 1"
)
ONE = f"SELECT {COLUMNS} FROM note_versions WHERE scope = ? AND id = ?"
FORGET = "DELETE FROM note_versions WHERE scope = ?"
ESCAPE = "\\"


def like_pattern(text: str) -> str:
    """`text` as a case-folded LIKE pattern matching it anywhere (wildcards escaped)."""
    escaped = text.lower().replace(ESCAPE, ESCAPE * 2).replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def list_sql(target: str | None) -> str:
    where = " AND target = ?" if target is not None else ""
    return (
        f"SELECT {COLUMNS} FROM note_versions WHERE scope = ? AND id > ?{where} "
        "ORDER BY id DESC LIMIT ?"
    )


def introducing_sql(target: str | None) -> str:
    where = " AND target = ?" if target is not None else ""
    return (
        f"SELECT {COLUMNS} FROM note_versions WHERE scope = ?{where} "
        "AND lower(after) LIKE ? ESCAPE '\\' AND lower(before) NOT LIKE ? ESCAPE '\\' "
        "ORDER BY id DESC LIMIT ?"
    )


def version(row: tuple[Any, ...]) -> NoteVersion:
    (vid, scope, target, actor, at, before, after, reason, session_id, turn, key, reverts) = row
    return NoteVersion(
        id=int(vid),
        scope=scope,
        target=target,
        actor=actor,
        at=float(at),
        before=before,
        after=after,
        reason=reason,
        session_id=session_id,
        turn=None if turn is None else int(turn),
        key_name=key,
        reverts=None if reverts is None else int(reverts),
    )


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


Execute = Callable[[str, tuple[Any, ...]], Cursor]


class SqlNoteHistory:
    """The contract over any DB-API connection; a backend supplies its transaction, its
    reads and its placeholder style."""

    placeholder = "?"

    def _transaction(self) -> AbstractContextManager[Execute]:
        raise NotImplementedError

    def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def add_version(self, scope: str, change: NoteChange, *, keep: int) -> NoteVersion:
        at = time.time()
        c = change
        with self._transaction() as execute:
            row = execute(
                self._sql(INSERT),
                (scope, c.target, c.actor, at, c.before, c.after, c.reason, c.session_id)
                + (c.turn, c.key_name, c.reverts),
            ).fetchone()
            self._fold(execute, scope, c.target, max(1, keep))
        return NoteVersion(**_fields(c), id=int(row[0]), scope=scope, at=at)

    def _fold(self, execute: Execute, scope: str, target: str, keep: int) -> None:
        count = int(execute(self._sql(COUNT), (scope, target)).fetchone()[0])
        if count <= keep:
            return
        folded = execute(self._sql(OLDEST), (scope, target, count - keep + 1)).fetchall()
        last_id = int(folded[-1][0])
        reason = f"{len(folded)} older versions folded into this one (memory.history_retention)"
        execute(self._sql(FOLD), (folded[0][1], reason, last_id))
        execute(self._sql(DROP_FOLDED), (scope, target, last_id))

    def latest_version(self, scope: str, target: str) -> NoteVersion | None:
        rows = self._fetch(self._sql(LATEST), (scope, target))
        return version(rows[0]) if rows else None

    def get_version(self, scope: str, version_id: int) -> NoteVersion | None:
        rows = self._fetch(self._sql(ONE), (scope, version_id))
        return version(rows[0]) if rows else None

    def list_versions(
        self, scope: str, *, target: str | None = None, limit: int = 50, after_id: int = 0
    ) -> list[NoteVersion]:
        params = (scope, after_id) + ((target,) if target is not None else ()) + (limit,)
        return [version(r) for r in self._fetch(self._sql(list_sql(target)), params)]

    def introducing(
        self, scope: str, text: str, *, target: str | None = None, limit: int = 20
    ) -> list[NoteVersion]:
        pattern = like_pattern(text)
        params = (scope,) + ((target,) if target is not None else ()) + (pattern, pattern, limit)
        return [version(r) for r in self._fetch(self._sql(introducing_sql(target)), params)]

    def forget_versions(self, scope: str) -> int:
        with self._transaction() as execute:
            rows = execute(self._sql(FORGET + " RETURNING id"), (scope,)).fetchall()
        return len(rows)


def _fields(change: NoteChange) -> dict[str, Any]:
    return {name: getattr(change, name) for name in NoteChange.__slots__}  # type: ignore[attr-defined]


class SQLiteNoteHistory(SqlNoteHistory):
    """Versions in state.db, written through the store's one connection and lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    @contextmanager
    def _transaction(self) -> Iterator[Execute]:
        with self._lock, _as_store_error():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn.execute
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock, _as_store_error():
            return self._conn.execute(sql, params).fetchall()


@contextmanager
def _as_store_error() -> Iterator[None]:
    """A busy or broken state.db is a `StoreError`, which callers of the contract handle."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreError(f"the memory history in state.db failed: {exc}") from None
