"""Scoped API keys: only a SHA-256 of each secret is kept (SQLite migration 9 here,
PostgreSQL migration 5 in postgres/api_keys.py)."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

M009_API_KEYS = """
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    label TEXT,
    created_at REAL NOT NULL,
    expires_at REAL,
    revoked_at REAL
);
CREATE INDEX api_keys_user ON api_keys (user_id);
"""

KEY_COLUMNS = "id, user_id, label, created_at, expires_at, revoked_at"


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    id: str
    user: str
    label: str | None
    created_at: float
    expires_at: float | None
    revoked_at: float | None

    def usable(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "user": self.user,
            "label": self.label,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked": self.revoked_at is not None,
        }


@runtime_checkable
class ApiKeyStore(Protocol):
    """A store that keeps scoped API keys (SQLite and PostgreSQL)."""

    def add_api_key(self, record: ApiKeyRecord, secret_hash: str) -> None: ...

    def api_key_by_hash(self, secret_hash: str) -> ApiKeyRecord | None: ...

    def list_api_keys(self) -> list[ApiKeyRecord]: ...

    def revoke_api_key(self, key_id: str) -> bool: ...

    def delete_api_keys_of(self, user: str) -> int:
        """Delete (not revoke: nothing of a forgotten user stays) every key of `user`."""
        ...

    def export_api_keys(self) -> list[tuple[ApiKeyRecord, str]]:
        """Every key with its secret's hash, for `hermes db copy` (the secrets stay unknown)."""
        ...


def key_params(record: ApiKeyRecord, secret_hash: str) -> tuple[Any, ...]:
    """The values of KEY_COLUMNS and then secret_hash, for an INSERT."""
    r = record
    return (r.id, r.user, r.label, r.created_at, r.expires_at, r.revoked_at, secret_hash)


def key_row(row: tuple[Any, ...]) -> ApiKeyRecord:
    """An `ApiKeyRecord` from a row of KEY_COLUMNS."""
    return ApiKeyRecord(row[0], row[1], row[2], row[3], row[4], row[5])


class ApiKeyStoreMixin:
    """Mixed into SQLiteStore."""

    if TYPE_CHECKING:  # provided by SQLiteStore
        _lock: threading.RLock

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...

    def add_api_key(self, record: ApiKeyRecord, secret_hash: str) -> None:
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO api_keys ({KEY_COLUMNS}, secret_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                key_params(record, secret_hash),
            )

    def api_key_by_hash(self, secret_hash: str) -> ApiKeyRecord | None:
        rows = self._read(
            f"SELECT {KEY_COLUMNS} FROM api_keys WHERE secret_hash = ?", (secret_hash,)
        )
        return key_row(rows[0]) if rows else None

    def list_api_keys(self) -> list[ApiKeyRecord]:
        rows = self._read(f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_at")
        return [key_row(r) for r in rows]

    def export_api_keys(self) -> list[tuple[ApiKeyRecord, str]]:
        rows = self._read(f"SELECT {KEY_COLUMNS}, secret_hash FROM api_keys ORDER BY created_at")
        return [(key_row(r), str(r[6])) for r in rows]

    def delete_api_keys_of(self, user: str) -> int:
        with self._write() as conn:
            return conn.execute("DELETE FROM api_keys WHERE user_id = ?", (user,)).rowcount

    def revoke_api_key(self, key_id: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (time.time(), key_id),
            )
            return cur.rowcount > 0
