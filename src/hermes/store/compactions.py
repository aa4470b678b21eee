"""SQLite side of `CompactionStore`: compaction records, hidden message ranges and learned
context windows."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from hermes.store.base import Compaction, StoreError

__all__ = ["Compaction", "CompactionStoreMixin"]


class CompactionStoreMixin:
    """Mixed into SQLiteStore; originals are never deleted, the view is recorded beside them."""

    if TYPE_CHECKING:  # provided by SQLiteStore
        _lock: threading.RLock
        _conn: sqlite3.Connection

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...

    def add_compaction(
        self, scope: str, session_id: str, *, head_end: int, upto_idx: int, summary: str, kind: str
    ) -> Compaction:
        now = time.time()
        with self._write() as conn:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM compactions WHERE scope = ? AND session_id = ?",
                (scope, session_id),
            ).fetchone()
            seq = int(row[0])
            conn.execute(
                "INSERT INTO compactions (scope, session_id, seq, head_end, upto_idx, summary, kind, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (scope, session_id, seq, head_end, upto_idx, summary, kind, now),
            )
        return Compaction(scope, session_id, seq, head_end, upto_idx, summary, kind, now)

    def latest_compaction(self, scope: str, session_id: str) -> Compaction | None:
        rows = self._read(
            "SELECT scope, session_id, seq, head_end, upto_idx, summary, kind, created_at "
            "FROM compactions WHERE scope = ? AND session_id = ? ORDER BY seq DESC LIMIT 1",
            (scope, session_id),
        )
        return Compaction(*rows[0]) if rows else None

    def compression_markers(self, scope: str, session_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT seq, head_end, upto_idx, kind, created_at, length(summary) FROM compactions "
            "WHERE scope = ? AND session_id = ? ORDER BY seq",
            (scope, session_id),
        )
        return [
            {
                "seq": r[0],
                "head_end": r[1],
                "upto_index": r[2],
                "kind": r[3],
                "created_at": r[4],
                "summary_chars": r[5],
            }
            for r in rows
        ]

    def hide_messages(self, scope: str, session_id: str, *, start: int, end: int) -> None:
        if not 0 <= start < end:
            raise StoreError(f"cannot hide messages [{start}, {end}): not a range of messages")
        with self._write() as conn:
            conn.execute(
                "INSERT INTO hidden_messages (scope, session_id, start_idx, end_idx, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, session_id, start_idx) DO UPDATE "
                "SET end_idx = MAX(end_idx, excluded.end_idx)",
                (scope, session_id, start, end, time.time()),
            )

    def hidden_ranges(self, scope: str, session_id: str) -> list[tuple[int, int]]:
        with self._lock:
            return self._hidden_in(self._conn, scope, session_id)

    @staticmethod
    def _hidden_in(conn: sqlite3.Connection, scope: str, session_id: str) -> list[tuple[int, int]]:
        rows = conn.execute(
            "SELECT start_idx, end_idx FROM hidden_messages WHERE scope = ? AND session_id = ? "
            "ORDER BY start_idx",
            (scope, session_id),
        ).fetchall()
        return [(int(r[0]), int(r[1])) for r in rows]

    def get_model_limit(self, model: str) -> int | None:
        rows = self._read("SELECT context_length FROM model_limits WHERE model = ?", (model,))
        return int(rows[0][0]) if rows else None

    def set_model_limit(self, model: str, context_length: int) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO model_limits (model, context_length, learned_at) VALUES (?, ?, ?) "
                "ON CONFLICT (model) DO UPDATE SET context_length = MIN(context_length, "
                "excluded.context_length), learned_at = excluded.learned_at",
                (model, context_length, time.time()),
            )
