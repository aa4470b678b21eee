"""`Idempotency-Key`s in PostgreSQL, so a retry that lands on another replica gets the first
answer instead of running the turn twice."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from hermes.store.base import IdempotencyClaim, IdempotentAnswer

if TYPE_CHECKING:
    from hermes.store.postgres.pool import Database


class PgIdempotency:
    """`IdempotencyStore` over the `idempotency_keys` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def claim_idempotency(
        self, scope: str, key: str, fingerprint: str, ttl_seconds: float
    ) -> tuple[IdempotencyClaim, IdempotentAnswer | None]:
        now = time.time()
        with self._db.transaction() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE scope = %s AND key = %s AND created_at < %s",
                (scope, key, now - ttl_seconds),
            )
            inserted = conn.execute(
                "INSERT INTO idempotency_keys (scope, key, fingerprint, created_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
                (scope, key, fingerprint, now),
            ).fetchone()
            if inserted is not None:
                return "new", None
            row = conn.execute(
                "SELECT fingerprint, status, body, headers FROM idempotency_keys "
                "WHERE scope = %s AND key = %s",
                (scope, key),
            ).fetchone()
        if row is None:
            return "pending", None  # released between the two statements: ask again
        if row[0] != fingerprint:
            return "conflict", None
        if row[1] is None:
            return "pending", None
        return "done", IdempotentAnswer(int(row[1]), bytes(row[2]), json.loads(row[3] or "{}"))

    def finish_idempotency(self, scope: str, key: str, answer: IdempotentAnswer) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET status = %s, body = %s, headers = %s "
                "WHERE scope = %s AND key = %s",
                (answer.status, answer.body, json.dumps(answer.headers), scope, key),
            )

    def release_idempotency(self, scope: str, key: str, fingerprint: str) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE scope = %s AND key = %s "
                "AND fingerprint = %s AND status IS NULL",
                (scope, key, fingerprint),
            )
