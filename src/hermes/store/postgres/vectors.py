"""PostgreSQL side of the `VectorStore` contract: embeddings shared by every replica.

Same rows as SQLite's `message_vectors` (bytes tagged with their model); a deleted message
takes its vector with it (foreign key), an edited one loses it (trigger), and each scope's
deleted vectors are counted (migration 6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from hermes.store.postgres.predicates import ONLY_ASKS, TELLS_WHEN
from hermes.store.search_contract import PendingWindow, StoredVector, text_key
from hermes.store.vector_sql import (
    CONVERSATIONAL,
    SPOKEN,
    WINDOW_TURNS,
    conversational,
    from_starts,
    next_turns,
    pending_windows_query,
    spoken,
    whole_only_query,
)

if TYPE_CHECKING:  # pool.py imports the schema, which imports this module
    from hermes.store.postgres.pool import Database

M004_MESSAGE_VECTORS = """
CREATE TABLE message_vectors (
    id bigint PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    scope text NOT NULL,
    model text NOT NULL,
    vec bytea NOT NULL
);
CREATE INDEX message_vectors_scope ON message_vectors (scope, model, id);
CREATE FUNCTION message_vectors_forget() RETURNS trigger AS $$
BEGIN
    DELETE FROM message_vectors WHERE id = OLD.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER message_vectors_au AFTER UPDATE OF content ON messages
FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
EXECUTE FUNCTION message_vectors_forget();
"""

# every deleted vector is counted per scope, so a process holding loaded vectors can tell
# with one read whether any of them is gone; once per statement, so deleting a session of
# many messages takes the scope's row lock once
M006_VECTOR_REMOVALS = """
CREATE TABLE vector_removals (
    scope text PRIMARY KEY,
    removed bigint NOT NULL
);
CREATE FUNCTION vector_removals_count() RETURNS trigger AS $$
BEGIN
    INSERT INTO vector_removals (scope, removed)
    SELECT scope, count(*) FROM gone GROUP BY scope
    ON CONFLICT (scope) DO UPDATE SET removed = vector_removals.removed + EXCLUDED.removed;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER vector_removals_ad AFTER DELETE ON message_vectors
REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
EXECUTE FUNCTION vector_removals_count();
"""

# a message's window vectors (`hermes.recall.windows`; SQLite's migration 22): gone with it,
# with an edit of it, and with the deletion or edit of a turn they hold
M016_WINDOW_VECTORS = f"""
CREATE TABLE window_vectors (
    id bigint PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    scope text NOT NULL,
    model text NOT NULL,
    vec bytea NOT NULL
);
CREATE FUNCTION window_vectors_forget() RETURNS trigger AS $$
BEGIN
    DELETE FROM window_vectors WHERE id = OLD.id OR id IN ({next_turns("OLD")});
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER window_vectors_ad AFTER DELETE ON messages
FOR EACH ROW EXECUTE FUNCTION window_vectors_forget();
CREATE TRIGGER window_vectors_au AFTER UPDATE OF content ON messages
FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
EXECUTE FUNCTION window_vectors_forget();
"""

# the turns before each pending message, newest first, in one statement (a round trip each
# would cost more than the rows)
_TURNS_BEFORE = (
    f"ARRAY(SELECT {spoken('p')} FROM messages p WHERE p.scope = m.scope "
    f"AND p.session_id = m.session_id AND p.idx < m.idx AND {conversational('p')} "
    f"ORDER BY p.idx DESC LIMIT {WINDOW_TURNS})"
)


class PgVectorStore:
    """Embeddings in the shared database beside the messages they describe."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def pending(
        self,
        model: str,
        *,
        scope: str | None = None,
        after_id: int = 0,
        limit: int = 256,
        starts: Mapping[str, int] | None = None,
    ) -> list[tuple[int, str, str]]:
        where = " AND m.scope = %s" if scope is not None else ""
        newest, newer = from_starts(starts, "%s", scope)
        params: tuple[object, ...] = (model, after_id) + ((scope,) if scope is not None else ())
        rows = self._db.fetch(
            f"SELECT m.id, m.scope, {SPOKEN} FROM messages m "
            f"LEFT JOIN message_vectors v ON v.id = m.id AND v.model = %s "
            f"WHERE v.id IS NULL AND m.id > %s AND {CONVERSATIONAL}{where}{newest} "
            f"ORDER BY m.id LIMIT %s",
            (*params, *newer, limit),
        )
        return [(int(r[0]), r[1], r[2]) for r in rows]

    def count_pending(
        self, model: str, *, scope: str | None = None, starts: Mapping[str, int] | None = None
    ) -> int:
        where = " AND m.scope = %s" if scope is not None else ""
        newest, newer = from_starts(starts, "%s", scope)
        params: tuple[object, ...] = (model,) + ((scope,) if scope is not None else ())
        rows = self._db.fetch(
            f"SELECT COUNT(*) FROM messages m "
            f"LEFT JOIN message_vectors v ON v.id = m.id AND v.model = %s "
            f"WHERE v.id IS NULL AND {CONVERSATIONAL}{where}{newest}",
            (*params, *newer),
        )
        return int(rows[0][0])

    def newest_starts(self, count: int, *, scope: str | None = None) -> dict[str, int]:
        # a scope's message count bounds its conversational ones: only bigger scopes count
        big = self._db.fetch(
            "SELECT scope FROM sessions WHERE %s::text IS NULL OR scope = %s "
            "GROUP BY scope HAVING sum(message_count) > %s",
            (scope, scope, count),
        )
        starts = {}
        for (name,) in big:
            rows = self._db.fetch(
                f"SELECT m.id FROM messages m WHERE m.scope = %s AND {CONVERSATIONAL} "
                "ORDER BY m.id DESC LIMIT 1 OFFSET %s",
                (name, count - 1),
            )
            if rows:
                starts[name] = int(rows[0][0])
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
        sql, params = whole_only_query(
            "%s", "octet_length", model, size, scope, after_id, limit, starts
        )
        rows = self._db.fetch(sql, params)
        return [(int(r[0]), r[1], r[2], bytes(r[3])) for r in rows]

    def put(self, model: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
        self._put("message_vectors", model, rows)

    def _put(self, table: str, model: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
        if not rows:
            return
        with self._db.transaction() as conn, conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {table} (id, scope, model, vec) "
                "SELECT %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM messages WHERE id = %s) "
                "ON CONFLICT (id) DO UPDATE SET model = EXCLUDED.model, vec = EXCLUDED.vec",
                [(mid, scope, model, vec, mid) for mid, scope, vec in rows],
            )

    def load(
        self, model: str, scope: str, *, after_id: int = 0, newest: int | None = None
    ) -> list[StoredVector]:
        rows = self._db.fetch(
            "SELECT v.id, m.session_id, v.vec, coalesce('name:' || m.name, 'role:' || m.role), "
            f"m.idx, m.role, m.timestamp, s.source, m.name, md5(m.content), {ONLY_ASKS}, "
            f"{TELLS_WHEN} "
            "FROM message_vectors v "
            "JOIN messages m ON m.id = v.id "
            "JOIN sessions s ON s.scope = m.scope AND s.id = m.session_id "
            "WHERE v.scope = %s AND v.model = %s AND v.id > %s ORDER BY v.id DESC LIMIT %s",
            (scope, model, after_id, newest),
        )
        rows.reverse()
        return [StoredVector.read(r, text_key(r[9], r[8]), bool(r[10]), bool(r[11])) for r in rows]

    def still_embedded(self, model: str, scope: str, message_ids: Sequence[int]) -> set[int]:
        ids = sorted({int(i) for i in message_ids})
        if not ids:
            return set()
        rows = self._db.fetch(
            "SELECT id FROM message_vectors WHERE id = ANY(%s) AND scope = %s AND model = %s",
            (ids, scope, model),
        )
        return {int(r[0]) for r in rows}

    def pending_windows(
        self, model: str, *, scope: str | None = None, after_id: int = 0, limit: int = 256
    ) -> list[PendingWindow]:
        sql, params = pending_windows_query("%s", model, scope, after_id, limit)
        sql = sql.replace(f"{SPOKEN} FROM", f"{SPOKEN}, {_TURNS_BEFORE} FROM", 1)
        rows = self._db.fetch(sql, params)
        return [PendingWindow(int(r[0]), r[1], (r[4], *r[5])) for r in rows]

    def put_windows(self, model: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
        self._put("window_vectors", model, rows)

    def windows(self, model: str, scope: str, message_ids: Sequence[int]) -> dict[int, bytes]:
        ids = sorted({int(i) for i in message_ids})
        if not ids:
            return {}
        rows = self._db.fetch(
            "SELECT id, vec FROM window_vectors WHERE id = ANY(%s) AND scope = %s AND model = %s",
            (ids, scope, model),
        )
        return {int(r[0]): bytes(r[1]) for r in rows}

    def removed(self, scope: str) -> int:
        rows = self._db.fetch("SELECT removed FROM vector_removals WHERE scope = %s", (scope,))
        return int(rows[0][0]) if rows else 0

    def count(self, model: str, scope: str) -> int:
        rows = self._db.fetch(
            "SELECT COUNT(*) FROM message_vectors WHERE scope = %s AND model = %s",
            (scope, model),
        )
        return int(rows[0][0])

    def newest_message_id(self) -> int:
        rows = self._db.fetch("SELECT coalesce(max(id), 0) FROM messages")
        return int(rows[0][0])
