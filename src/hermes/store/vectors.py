"""SQLite side of the `VectorStore` contract: one embedding per conversational message.

Vectors are float16 bytes tagged with the model that made them, so switching models shows
every message as pending again instead of mixing spaces. A message that is deleted or
edited loses its vector by trigger (migration 10), counted per scope (migration 11); the
embedder fills it again later.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence

from hermes.store.search_contract import (
    PendingWindow,
    StoredVector,
    only_asks,
    tells_when,
    text_key,
)
from hermes.store.search_schema import BODY_CHARS
from hermes.store.vector_sql import (
    CONVERSATIONAL,
    SPOKEN,
    from_starts,
    next_turns,
    pending_windows_query,
    turns_before_query,
    whole_only_query,
)

M010_MESSAGE_VECTORS = """
CREATE TABLE message_vectors (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
CREATE INDEX message_vectors_scope ON message_vectors (scope, model, id);
CREATE TRIGGER message_vectors_ad AFTER DELETE ON messages BEGIN
    DELETE FROM message_vectors WHERE id = old.id;
END;
CREATE TRIGGER message_vectors_au AFTER UPDATE OF content ON messages
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM message_vectors WHERE id = old.id;
END;
"""

# every deleted vector is counted per scope, so a process holding loaded vectors can tell
# with one read whether any of them is gone (a replaced vector is not deleted: without
# recursive_triggers, INSERT OR REPLACE fires no delete trigger)
M011_VECTOR_REMOVALS = """
CREATE TABLE vector_removals (
    scope TEXT PRIMARY KEY,
    removed INTEGER NOT NULL
);
CREATE TRIGGER vector_removals_ad AFTER DELETE ON message_vectors BEGIN
    INSERT INTO vector_removals (scope, removed) VALUES (old.scope, 1)
    ON CONFLICT (scope) DO UPDATE SET removed = removed + 1;
END;
"""

# a message's window vectors (`hermes.recall.windows`): gone with it, with an edit of it,
# and with the deletion or edit of a turn they hold (one of the two before it)
M022_WINDOW_VECTORS = f"""
CREATE TABLE window_vectors (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
CREATE TRIGGER window_vectors_ad AFTER DELETE ON messages BEGIN
    DELETE FROM window_vectors WHERE id = old.id;
    DELETE FROM window_vectors WHERE id IN ({next_turns("old")});
END;
CREATE TRIGGER window_vectors_au AFTER UPDATE OF content ON messages
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM window_vectors WHERE id = old.id;
    DELETE FROM window_vectors WHERE id IN ({next_turns("old")});
END;
"""


class SQLiteVectorStore:
    """Embeddings in state.db beside the messages they describe."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def pending(
        self,
        model: str,
        *,
        scope: str | None = None,
        after_id: int = 0,
        limit: int = 256,
        starts: Mapping[str, int] | None = None,
    ) -> list[tuple[int, str, str]]:
        """(message id, scope, text) of conversational messages with no vector of `model`,
        oldest first from `after_id` (a cursor, so a long backfill never rescans)."""
        where = " AND m.scope = ?" if scope is not None else ""
        newest, newer = from_starts(starts, "?", scope)
        params: tuple[object, ...] = (model, after_id) + ((scope,) if scope is not None else ())
        with self._lock:
            rows = self._conn.execute(
                f"SELECT m.id, m.scope, {SPOKEN} FROM messages m "
                f"LEFT JOIN message_vectors v ON v.id = m.id AND v.model = ? "
                f"WHERE v.id IS NULL AND m.id > ? AND {CONVERSATIONAL}{where}{newest} "
                f"ORDER BY m.id LIMIT ?",
                (*params, *newer, limit),
            ).fetchall()
        return [(int(r[0]), r[1], r[2]) for r in rows]

    def count_pending(
        self, model: str, *, scope: str | None = None, starts: Mapping[str, int] | None = None
    ) -> int:
        where = " AND m.scope = ?" if scope is not None else ""
        newest, newer = from_starts(starts, "?", scope)
        params: tuple[object, ...] = (model,) + ((scope,) if scope is not None else ())
        with self._lock:
            row = self._conn.execute(
                f"SELECT COUNT(*) FROM messages m "
                f"LEFT JOIN message_vectors v ON v.id = m.id AND v.model = ? "
                f"WHERE v.id IS NULL AND {CONVERSATIONAL}{where}{newest}",
                (*params, *newer),
            ).fetchone()
        return int(row[0])

    def newest_starts(self, count: int, *, scope: str | None = None) -> dict[str, int]:
        with self._lock:
            # a scope's message count bounds its conversational ones: only bigger scopes
            # are walked, newest first by id ("+": not the scope index, which would sort
            # every message of the scope)
            big = self._conn.execute(
                "SELECT scope FROM sessions WHERE ? IS NULL OR scope = ? "
                "GROUP BY scope HAVING sum(message_count) > ?",
                (scope, scope, count),
            ).fetchall()
            starts = {}
            for (name,) in big:
                row = self._conn.execute(
                    f"SELECT m.id FROM messages m WHERE +m.scope = ? AND {CONVERSATIONAL} "
                    "ORDER BY m.id DESC LIMIT 1 OFFSET ?",
                    (name, count - 1),
                ).fetchone()
                if row is not None:
                    starts[name] = int(row[0])
        return starts

    def whole_only(
        self,
        model: str,
        size: int,
        *,
        scope: str | None = None,
        after_id: int = 0,
        limit: int = 256,
        starts: Mapping[str, int] | None = None,
    ) -> list[tuple[int, str, str, bytes]]:
        sql, params = whole_only_query("?", "length", model, size, scope, after_id, limit, starts)
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [(int(r[0]), r[1], r[2], bytes(r[3])) for r in rows]

    def put(self, model: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Store (message id, scope, vector bytes); a message deleted meanwhile is skipped."""
        self._put("message_vectors", model, rows)

    def _put(self, table: str, model: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    f"INSERT OR REPLACE INTO {table} (id, scope, model, vec) "
                    "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?)",
                    [(mid, scope, model, vec, mid) for mid, scope, vec in rows],
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def load(
        self, model: str, scope: str, *, after_id: int = 0, newest: int | None = None
    ) -> list[StoredVector]:
        """The vectors of `scope` by id from `after_id` on (only the `newest` of them), with
        their messages' places (see `VectorStore.load`)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT v.id, m.session_id, v.vec, coalesce('name:' || m.name, 'role:' || m.role), "
                "m.idx, m.role, m.timestamp, s.source, m.name, m.content "
                "FROM message_vectors v "
                "JOIN messages m ON m.id = v.id "
                "JOIN sessions s ON s.scope = m.scope AND s.id = m.session_id "
                "WHERE v.scope = ? AND v.model = ? AND v.id > ? ORDER BY v.id DESC LIMIT ?",
                (scope, model, after_id, -1 if newest is None else newest),
            ).fetchall()
        rows.reverse()
        # dated as `SQLiteSearch.tells_when` reads it: the text its index holds
        return [
            StoredVector.read(
                r, text_key(r[9], r[8]), only_asks(r[9]), tells_when((r[9] or "")[:BODY_CHARS])
            )
            for r in rows
        ]

    def still_embedded(self, model: str, scope: str, message_ids: Sequence[int]) -> set[int]:
        ids = list(dict.fromkeys(int(i) for i in message_ids))
        found: set[int] = set()
        with self._lock:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(  # by id ("+": not the scope index, slower)
                    f"SELECT id FROM message_vectors WHERE id IN ({marks}) "
                    "AND +scope = ? AND +model = ?",
                    (*chunk, scope, model),
                ).fetchall()
                found.update(int(r[0]) for r in rows)
        return found

    def pending_windows(
        self, model: str, *, scope: str | None = None, after_id: int = 0, limit: int = 256
    ) -> list[PendingWindow]:
        sql, params = pending_windows_query("?", model, scope, after_id, limit)
        before = turns_before_query("?")
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
            return [
                PendingWindow(
                    int(mid),
                    sc,
                    (text, *(r[0] for r in self._conn.execute(before, (sc, session, idx)))),
                )
                for mid, sc, session, idx, text in rows
            ]

    def put_windows(self, model: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
        self._put("window_vectors", model, rows)

    def windows(self, model: str, scope: str, message_ids: Sequence[int]) -> dict[int, bytes]:
        ids = list(dict.fromkeys(int(i) for i in message_ids))[:500]
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT id, vec FROM window_vectors WHERE id IN ({marks}) "
                "AND scope = ? AND model = ?",
                (*ids, scope, model),
            ).fetchall()
        return {int(r[0]): bytes(r[1]) for r in rows}

    def removed(self, scope: str) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT removed FROM vector_removals WHERE scope = ?", (scope,)
            ).fetchone()
        return int(row[0]) if row else 0

    def count(self, model: str, scope: str) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM message_vectors WHERE scope = ? AND model = ?",
                (scope, model),
            ).fetchone()
        return int(row[0])

    def newest_message_id(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
        return int(row[0])
