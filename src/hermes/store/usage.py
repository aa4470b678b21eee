"""SQLite side of the `UsageStore` contract, and the SQL both backends share.

One row per turn and model: the day is worked out when the turn ends (in the configured
timezone), so a report groups by a plain column on either backend and no SQL needs to know
about timezones. Cost is not stored: it is tokens times the price known when asked.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from hermes.store.base import StoreError, UsageRecord, UsageTotal

M017_MODEL_USAGE = """
CREATE TABLE model_usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    model TEXT NOT NULL,
    day TEXT NOT NULL,
    at REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    calls INTEGER NOT NULL,
    session_id TEXT,
    source TEXT NOT NULL
);
CREATE INDEX model_usage_at ON model_usage (at);
CREATE INDEX model_usage_scope_at ON model_usage (scope, at);
"""

# The SQL both backends run; `?` placeholders (the PostgreSQL store swaps them for `%s`).
INSERT = (
    "INSERT INTO model_usage (scope, model, day, at, prompt_tokens, completion_tokens, calls, "
    "session_id, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
FORGET = "DELETE FROM model_usage WHERE scope = ?"
SESSION_TOTALS = (
    "SELECT '', model, scope, SUM(prompt_tokens), SUM(completion_tokens), SUM(calls) "
    "FROM model_usage WHERE scope = ? AND session_id = ? GROUP BY model, scope ORDER BY model"
)
SESSION_INDEX = "CREATE INDEX model_usage_session ON model_usage (scope, session_id);"
"""For `SESSION_TOTALS` (a chat's `/usage`): added with the message models (SQLite
migration 21, PostgreSQL 15)."""


def totals_sql(by_scope: bool) -> str:
    where = " AND scope = ?" if by_scope else ""
    return (
        "SELECT day, model, scope, SUM(prompt_tokens), SUM(completion_tokens), SUM(calls) "
        f"FROM model_usage WHERE at >= ? AND at < ?{where} "
        "GROUP BY day, model, scope ORDER BY day, model, scope"
    )


def totals_params(since: float, until: float, scope: str | None) -> tuple[Any, ...]:
    return (since, until) if scope is None else (since, until, scope)


def record_params(r: UsageRecord) -> tuple[Any, ...]:
    return (
        r.scope,
        r.model,
        r.day,
        r.at,
        r.prompt_tokens,
        r.completion_tokens,
        r.calls,
        r.session_id,
        r.source,
    )


def total_from_row(row: Sequence[Any]) -> UsageTotal:
    day, model, scope, prompt, completion, calls = row
    return UsageTotal(day, model, scope, int(prompt), int(completion), int(calls))


class SQLiteUsageStore:
    """Usage rows in state.db, through the store's one connection and lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def record_usage(self, records: Sequence[UsageRecord]) -> None:
        if not records:
            return
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"recording token usage in state.db failed: {exc}") from None
            try:
                self._conn.executemany(INSERT, [record_params(r) for r in records])
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def usage_totals(
        self, *, since: float, until: float, scope: str | None = None
    ) -> list[UsageTotal]:
        with self._lock:
            rows = self._conn.execute(
                totals_sql(scope is not None), totals_params(since, until, scope)
            ).fetchall()
        return [total_from_row(r) for r in rows]

    def session_usage(self, scope: str, session_id: str) -> list[UsageTotal]:
        with self._lock:
            rows = self._conn.execute(SESSION_TOTALS, (scope, session_id)).fetchall()
        return [total_from_row(r) for r in rows]

    def forget_usage(self, scope: str) -> int:
        with self._lock:
            return self._conn.execute(FORGET, (scope,)).rowcount
