"""Shared records and quota uses in PostgreSQL, so every replica sees the same stored
responses, pairing codes, sign-outs, approvals and delivery keys, and a key's quota holds
across replicas (the logic and SQL are state.db's, see `hermes.store.records`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from hermes.store.records import RecordLogic

if TYPE_CHECKING:  # pool.py imports the schema, which imports this module
    from hermes.store.postgres.pool import Database

M013_SHARED_RECORDS = """
CREATE TABLE shared_records (
    kind text NOT NULL,
    scope text NOT NULL,
    key text NOT NULL,
    body text NOT NULL,
    created_at double precision NOT NULL,
    expires_at double precision,
    PRIMARY KEY (kind, scope, key)
);
CREATE INDEX shared_records_kind_created ON shared_records (kind, created_at);
CREATE INDEX shared_records_scope ON shared_records (scope);
"""

M014_QUOTA_USES = """
CREATE TABLE quota_uses (
    counter text NOT NULL,
    at double precision NOT NULL
);
CREATE INDEX quota_uses_counter_at ON quota_uses (counter, at);
"""


class PgRecords(RecordLogic):
    """`RecordStore` over the `shared_records` and `quota_uses` tables."""

    placeholder = "%s"

    def __init__(self, db: Database) -> None:
        self._db = db

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._db.transaction() as conn:
            yield conn

    def _lock_names(self, conn: Any, names: Sequence[str]) -> None:
        for name in names:  # sorted by the caller: two replicas never wait on each other
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", (name,))
