"""SQLite side of the `RunStore` contract: `/v1/runs` runs and their events in state.db.

A run is one row updated in place; its events are appended rows numbered per run, so a late
subscriber (or another process) replays them in order from any point.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from hermes.store.base import RUN_FINAL, RunEvent, RunRecord

M013_RUNS = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    status TEXT NOT NULL,
    session_id TEXT,
    model TEXT,
    output TEXT,
    usage TEXT,
    error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX runs_scope ON runs (scope, created_at);
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""

UNFINISHED = f"status NOT IN ({', '.join(repr(s) for s in sorted(RUN_FINAL))})"
"""SQL for "the run is not over" (`RUN_FINAL`), shared with the PostgreSQL store."""
UPSERT_TAIL = (
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
    "session_id = excluded.session_id, output = excluded.output, "
    "usage = excluded.usage, error = excluded.error, "
    f"updated_at = excluded.updated_at WHERE runs.{UNFINISHED}"
)


def failed_event(run_id: str, seq: int, error: dict[str, Any], at: float) -> RunEvent:
    """The `run.failed` event `fail_run` appends (shaped as the owning replica's would be)."""
    return RunEvent(seq, {"event": "run.failed", "run_id": run_id, "timestamp": at, "error": error})


RUN_COLUMNS = "id, scope, status, session_id, model, output, usage, error, created_at, updated_at"


def run_params(run: RunRecord) -> tuple[Any, ...]:
    """The run as a row, in `RUN_COLUMNS` order (shared with the PostgreSQL store)."""
    return (
        run.id,
        run.scope,
        run.status,
        run.session_id,
        run.model,
        run.output,
        json.dumps(run.usage) if run.usage is not None else None,
        json.dumps(run.error) if run.error is not None else None,
        run.created_at,
        run.updated_at,
    )


def run_from_row(row: Sequence[Any]) -> RunRecord:
    rid, scope, status, session_id, model, output, usage, error, created, updated = row
    return RunRecord(
        id=rid,
        scope=scope,
        status=status,
        session_id=session_id,
        model=model,
        output=output,
        usage=json.loads(usage) if usage else None,
        error=json.loads(error) if error else None,
        created_at=float(created),
        updated_at=float(updated),
    )


class SQLiteRunStore:
    """Runs beside the sessions they continue, through the store's one connection."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def save_run(self, run: RunRecord, events: Sequence[RunEvent] = ()) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    f"INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    + UPSERT_TAIL,
                    run_params(run),
                )
                self._conn.executemany(
                    "INSERT OR IGNORE INTO run_events (run_id, seq, data) VALUES (?, ?, ?)",
                    [(run.id, e.seq, json.dumps(e.data)) for e in events],
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def fail_run(self, scope: str, run_id: str, error: dict[str, Any]) -> RunRecord | None:
        now = time.time()
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                changed = self._conn.execute(
                    "UPDATE runs SET status = 'failed', error = ?, updated_at = ? "
                    f"WHERE id = ? AND scope = ? AND {UNFINISHED}",
                    (json.dumps(error), now, run_id, scope),
                ).rowcount
                if changed:
                    (last,) = self._conn.execute(
                        "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?", (run_id,)
                    ).fetchone()
                    event = failed_event(run_id, int(last) + 1, error, now)
                    self._conn.execute(
                        "INSERT INTO run_events (run_id, seq, data) VALUES (?, ?, ?)",
                        (run_id, event.seq, json.dumps(event.data)),
                    )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return self.get_run(scope, run_id) if changed else None

    def get_run(self, scope: str, run_id: str) -> RunRecord | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ? AND scope = ?", (run_id, scope)
            ).fetchone()
        return run_from_row(row) if row is not None else None

    def run_events(
        self, scope: str, run_id: str, *, after: int = 0, limit: int = 1000
    ) -> list[RunEvent]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT e.seq, e.data FROM run_events e JOIN runs r ON r.id = e.run_id "
                "WHERE e.run_id = ? AND r.scope = ? AND e.seq > ? ORDER BY e.seq LIMIT ?",
                (run_id, scope, after, limit),
            ).fetchall()
        return [RunEvent(int(seq), json.loads(data)) for seq, data in rows]

    def delete_runs(self, scope: str) -> int:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "DELETE FROM run_events WHERE run_id IN (SELECT id FROM runs WHERE scope = ?)",
                    (scope,),
                )
                removed = self._conn.execute("DELETE FROM runs WHERE scope = ?", (scope,)).rowcount
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return removed
