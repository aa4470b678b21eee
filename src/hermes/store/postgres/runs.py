"""`/v1/runs` runs and their events in PostgreSQL, so any replica answers a run's status and
replays its events (SPEC §12: runs live in the database when it is shared)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes.store.base import RunEvent, RunRecord
from hermes.store.runs import (
    RUN_COLUMNS,
    UNFINISHED,
    UPSERT_TAIL,
    failed_event,
    run_from_row,
    run_params,
)

if TYPE_CHECKING:
    from hermes.store.postgres.pool import Database

M008_RUNS = """
CREATE TABLE runs (
    id text PRIMARY KEY,
    scope text NOT NULL,
    status text NOT NULL,
    session_id text,
    model text,
    output text,
    usage text,
    error text,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
);
CREATE INDEX runs_scope ON runs (scope, created_at);
CREATE TABLE run_events (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq integer NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


class PgRunStore:
    """`RunStore` over the `runs` and `run_events` tables."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def save_run(self, run: RunRecord, events: Sequence[RunEvent] = ()) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                f"INSERT INTO runs ({RUN_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) " + UPSERT_TAIL,
                run_params(run),
            )
            if events:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO run_events (run_id, seq, data) VALUES (%s, %s, %s) "
                        "ON CONFLICT DO NOTHING",
                        [(run.id, e.seq, json.dumps(e.data)) for e in events],
                    )

    def fail_run(self, scope: str, run_id: str, error: dict[str, Any]) -> RunRecord | None:
        now = time.time()
        with self._db.transaction() as conn:
            row = conn.execute(
                "UPDATE runs SET status = 'failed', error = %s, updated_at = %s "
                f"WHERE id = %s AND scope = %s AND {UNFINISHED} RETURNING {RUN_COLUMNS}",
                (json.dumps(error), now, run_id, scope),
            ).fetchone()
            if row is None:
                return None
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = %s", (run_id,)
            ).fetchone() or (0,)
            event = failed_event(run_id, int(last) + 1, error, now)
            conn.execute(
                "INSERT INTO run_events (run_id, seq, data) VALUES (%s, %s, %s)",
                (run_id, event.seq, json.dumps(event.data)),
            )
        return run_from_row(row)

    def get_run(self, scope: str, run_id: str) -> RunRecord | None:
        with self._db.connection() as conn:
            row = conn.execute(
                f"SELECT {RUN_COLUMNS} FROM runs WHERE id = %s AND scope = %s", (run_id, scope)
            ).fetchone()
        return run_from_row(row) if row is not None else None

    def run_events(
        self, scope: str, run_id: str, *, after: int = 0, limit: int = 1000
    ) -> list[RunEvent]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT e.seq, e.data FROM run_events e JOIN runs r ON r.id = e.run_id "
                "WHERE e.run_id = %s AND r.scope = %s AND e.seq > %s ORDER BY e.seq LIMIT %s",
                (run_id, scope, after, limit),
            ).fetchall()
        return [RunEvent(int(seq), json.loads(data)) for seq, data in rows]

    def delete_runs(self, scope: str) -> int:
        with self._db.connection() as conn:
            cur = conn.execute("DELETE FROM runs WHERE scope = %s", (scope,))
            return cur.rowcount
