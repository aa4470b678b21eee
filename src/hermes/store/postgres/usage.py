"""Token usage per turn and model in PostgreSQL, so every replica's turns add up in one
report (the SQL is state.db's, see `hermes.store.usage`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermes.store.base import UsageRecord, UsageTotal
from hermes.store.usage import (
    FORGET,
    INSERT,
    SESSION_TOTALS,
    record_params,
    total_from_row,
    totals_params,
    totals_sql,
)

if TYPE_CHECKING:  # pool.py imports the schema, which imports this module
    from hermes.store.postgres.pool import Database

M012_MODEL_USAGE = """
CREATE TABLE model_usage (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope text NOT NULL,
    model text NOT NULL,
    day text NOT NULL,
    at double precision NOT NULL,
    prompt_tokens bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    calls integer NOT NULL,
    session_id text,
    source text NOT NULL
);
CREATE INDEX model_usage_at ON model_usage (at);
CREATE INDEX model_usage_scope_at ON model_usage (scope, at);
"""


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


class PgUsageStore:
    """`UsageStore` over the `model_usage` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def record_usage(self, records: Sequence[UsageRecord]) -> None:
        if not records:
            return
        with self._db.transaction() as conn, conn.cursor() as cur:
            cur.executemany(_pg(INSERT), [record_params(r) for r in records])

    def usage_totals(
        self, *, since: float, until: float, scope: str | None = None
    ) -> list[UsageTotal]:
        rows = self._db.fetch(
            _pg(totals_sql(scope is not None)), totals_params(since, until, scope)
        )
        return [total_from_row(r) for r in rows]

    def session_usage(self, scope: str, session_id: str) -> list[UsageTotal]:
        rows = self._db.fetch(_pg(SESSION_TOTALS), (scope, session_id))
        return [total_from_row(r) for r in rows]

    def forget_usage(self, scope: str) -> int:
        with self._db.transaction() as conn:
            return conn.execute(_pg(FORGET), (scope,)).rowcount
