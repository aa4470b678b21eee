"""The `RecordStore` contract's logic, written once for both backends.

Shared records are small JSON bodies keyed by (kind, scope, key) with an optional expiry;
quota uses are timestamps per counter. Each backend only says how to open a transaction
(`_transaction`) and how to lock a name inside it (`_lock_names`); the SQL is the same text
(`?` placeholders, which the PostgreSQL side swaps for `%s`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from hermes.store.base import RecordStore, SharedRecord, Store, StoreError

M018_SHARED_RECORDS = """
CREATE TABLE shared_records (
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL,
    PRIMARY KEY (kind, scope, key)
);
CREATE INDEX shared_records_kind_created ON shared_records (kind, created_at);
CREATE INDEX shared_records_scope ON shared_records (scope);
"""

M019_QUOTA_USES = """
CREATE TABLE quota_uses (
    counter TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX quota_uses_counter_at ON quota_uses (counter, at);
"""

_COLUMNS = "kind, scope, key, body, created_at, expires_at"
_LIVE = "(expires_at IS NULL OR expires_at > ?)"


class _Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class _Conn(Protocol):
    def execute(self, sql: Any, params: Any = ...) -> Any: ...


def _record(row: Sequence[Any]) -> SharedRecord:
    kind, scope, key, body, created, expires = row
    return SharedRecord(
        str(kind),
        str(scope),
        str(key),
        json.loads(body),
        float(created),
        None if expires is None else float(expires),
    )


def _expiry(now: float, ttl: float | None) -> float | None:
    return None if ttl is None else now + ttl


class RecordLogic:
    """Every `RecordStore` method over `_transaction` and `_lock_names`."""

    placeholder = "?"

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[_Conn]:
        raise NotImplementedError
        yield  # pragma: no cover

    def _lock_names(self, conn: _Conn, names: Sequence[str]) -> None:
        """Serialize writers of `names` until the transaction ends (SQLite: the whole
        database already is, by BEGIN IMMEDIATE)."""

    def _run(self, conn: _Conn, sql: str, params: Sequence[Any] = ()) -> _Cursor:
        if self.placeholder != "?":
            sql = sql.replace("?", self.placeholder)
        cursor: _Cursor = conn.execute(sql, tuple(params))
        return cursor

    def put_record(
        self, kind: str, scope: str, key: str, body: dict[str, Any], *, ttl: float | None = None
    ) -> None:
        now = time.time()
        with self._transaction() as conn:
            self._run(
                conn,
                f"INSERT INTO shared_records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (kind, scope, key) DO UPDATE SET body = excluded.body, "
                "created_at = excluded.created_at, expires_at = excluded.expires_at",
                (kind, scope, key, json.dumps(body), now, _expiry(now, ttl)),
            )

    def add_record(
        self, kind: str, scope: str, key: str, body: dict[str, Any], *, ttl: float | None = None
    ) -> bool:
        now = time.time()
        with self._transaction() as conn:
            self._run(
                conn,
                "DELETE FROM shared_records WHERE kind = ? AND scope = ? AND key = ? "
                "AND expires_at IS NOT NULL AND expires_at <= ?",
                (kind, scope, key, now),
            )
            cur = self._run(
                conn,
                f"INSERT INTO shared_records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (kind, scope, key) DO NOTHING",
                (kind, scope, key, json.dumps(body), now, _expiry(now, ttl)),
            )
            return cur.rowcount == 1

    def get_record(self, kind: str, scope: str, key: str) -> SharedRecord | None:
        with self._transaction() as conn:
            row = self._run(
                conn,
                f"SELECT {_COLUMNS} FROM shared_records WHERE kind = ? AND scope = ? "
                f"AND key = ? AND {_LIVE}",
                (kind, scope, key, time.time()),
            ).fetchone()
        return _record(row) if row else None

    def take_record(self, kind: str, scope: str, key: str) -> SharedRecord | None:
        with self._transaction() as conn:
            row = self._run(
                conn,
                "DELETE FROM shared_records WHERE kind = ? AND scope = ? AND key = ? "
                f"RETURNING {_COLUMNS}",
                (kind, scope, key),
            ).fetchone()
        if not row:
            return None
        found = _record(row)
        live = found.expires_at is None or found.expires_at > time.time()
        return found if live else None

    def list_records(
        self, kind: str, scope: str | None = None, *, limit: int = 1000
    ) -> list[SharedRecord]:
        where, params = "kind = ?", [kind]
        if scope is not None:
            where, params = "kind = ? AND scope = ?", [kind, scope]
        with self._transaction() as conn:
            rows = self._run(
                conn,
                f"SELECT {_COLUMNS} FROM shared_records WHERE {where} AND {_LIVE} "
                "ORDER BY created_at DESC, key LIMIT ?",
                (*params, time.time(), limit),
            ).fetchall()
        return [_record(r) for r in rows]

    def delete_records(self, kind: str, scope: str, keys: Sequence[str] | None = None) -> int:
        with self._transaction() as conn:
            if keys is None:
                cur = self._run(
                    conn, "DELETE FROM shared_records WHERE kind = ? AND scope = ?", (kind, scope)
                )
                return cur.rowcount
            removed = 0
            for key in keys:
                removed += self._run(
                    conn,
                    "DELETE FROM shared_records WHERE kind = ? AND scope = ? AND key = ?",
                    (kind, scope, key),
                ).rowcount
            return removed

    def forget_records(self, scope: str) -> int:
        with self._transaction() as conn:
            return self._run(conn, "DELETE FROM shared_records WHERE scope = ?", (scope,)).rowcount

    def trim_records(self, kind: str, keep: int) -> int:
        now = time.time()
        with self._transaction() as conn:
            removed = self._run(
                conn,
                "DELETE FROM shared_records WHERE kind = ? AND expires_at IS NOT NULL "
                "AND expires_at <= ?",
                (kind, now),
            ).rowcount
            row = self._run(
                conn,
                "SELECT created_at FROM shared_records WHERE kind = ? "
                "ORDER BY created_at DESC LIMIT 1 OFFSET ?",
                (kind, max(keep - 1, 0)),
            ).fetchone()
            if row is not None and keep > 0:
                removed += self._run(
                    conn,
                    "DELETE FROM shared_records WHERE kind = ? AND created_at < ?",
                    (kind, row[0]),
                ).rowcount
            return removed

    def use_quota(
        self, counters: Sequence[tuple[str, float, int]], now: float
    ) -> tuple[str, float] | None:
        with self._transaction() as conn:
            self._lock_names(conn, sorted({c for c, _, _ in counters}))
            for counter, span, limit in counters:
                self._run(
                    conn,
                    "DELETE FROM quota_uses WHERE counter = ? AND at <= ?",
                    (counter, now - span),
                )
                row = self._run(
                    conn,
                    "SELECT count(*), min(at) FROM quota_uses WHERE counter = ?",
                    (counter,),
                ).fetchone()
                used, oldest = int(row[0]), row[1]
                if used >= limit:
                    return counter, float(oldest) + span - now
            for counter, _, _ in counters:
                self._run(
                    conn, "INSERT INTO quota_uses (counter, at) VALUES (?, ?)", (counter, now)
                )
        return None


class SQLiteRecords(RecordLogic):
    """Records in state.db, through the store's one connection and lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[_Conn]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"writing shared records in state.db failed: {exc}") from None
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")


def records_of(store: Store) -> RecordStore:
    """The store's shared records (every backend keeps them), or a StoreError naming it."""
    records: RecordStore | None = getattr(store, "records", None)
    if records is None:
        raise StoreError(f"the store {store.url} keeps no shared records")
    return records
