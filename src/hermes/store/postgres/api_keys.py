"""Scoped API keys in PostgreSQL (migration 5): the same table and rules as SQLite's, so a
key minted on one replica is honoured by every other one."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hermes.store.api_keys import KEY_COLUMNS, ApiKeyRecord, key_params, key_row

if TYPE_CHECKING:
    from hermes.store.postgres.pool import Database

M005_API_KEYS = """
CREATE TABLE api_keys (
    id text PRIMARY KEY,
    secret_hash text NOT NULL UNIQUE,
    user_id text NOT NULL,
    label text,
    created_at double precision NOT NULL,
    expires_at double precision,
    revoked_at double precision
);
CREATE INDEX api_keys_user ON api_keys (user_id);
"""


class PgApiKeysMixin:
    """Mixed into PostgresStore: the `ApiKeyStore` protocol over its pool."""

    _db: Database

    def add_api_key(self, record: ApiKeyRecord, secret_hash: str) -> None:
        with self._db.connection() as conn:
            conn.execute(
                f"INSERT INTO api_keys ({KEY_COLUMNS}, secret_hash) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                key_params(record, secret_hash),
            )

    def api_key_by_hash(self, secret_hash: str) -> ApiKeyRecord | None:
        rows = self._db.fetch(
            f"SELECT {KEY_COLUMNS} FROM api_keys WHERE secret_hash = %s", (secret_hash,)
        )
        return key_row(rows[0]) if rows else None

    def list_api_keys(self) -> list[ApiKeyRecord]:
        rows = self._db.fetch(f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_at, id")
        return [key_row(r) for r in rows]

    def export_api_keys(self) -> list[tuple[ApiKeyRecord, str]]:
        rows = self._db.fetch(
            f"SELECT {KEY_COLUMNS}, secret_hash FROM api_keys ORDER BY created_at, id"
        )
        return [(key_row(r), str(r[6])) for r in rows]

    def delete_api_keys_of(self, user: str) -> int:
        with self._db.connection() as conn:
            return conn.execute("DELETE FROM api_keys WHERE user_id = %s", (user,)).rowcount

    def revoke_api_key(self, key_id: str) -> bool:
        with self._db.connection() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                (time.time(), key_id),
            )
            return cur.rowcount > 0
