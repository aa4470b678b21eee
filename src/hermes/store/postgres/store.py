"""PostgreSQL implementation of the Store contract, shared by any number of replicas.

Appends take the session row `FOR UPDATE`, so two replicas appending to one session queue
on the row and positions never interleave; the turn lease (`locks`) uses the database's
clock, and a lease whose replica's presence lock is gone (the process died) is free.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from hermes.store.base import (
    Compaction,
    Lease,
    MessageRecord,
    NewMessage,
    NewSession,
    SchemaStatus,
    ScopeStats,
    SessionRecord,
    StoreError,
    StoreParts,
)
from hermes.store.index_backlog import DUE_AT, Backlog, BacklogThread
from hermes.store.leases import holder_is_dead
from hermes.store.postgres.api_keys import PgApiKeysMixin
from hermes.store.postgres.idempotency import PgIdempotency
from hermes.store.postgres.note_history import PgNoteHistory
from hermes.store.postgres.pool import PRESENCE_NAMESPACE, Database, Presence
from hermes.store.postgres.records import PgRecords
from hermes.store.postgres.runs import PgRunStore
from hermes.store.postgres.search import PgSearch
from hermes.store.postgres.search_index import (
    PIECE_SESSIONS,
    catch_up,
    count_waiting,
    index_sessions,
)
from hermes.store.postgres.shared import PgDocuments
from hermes.store.postgres.usage import PgUsageStore
from hermes.store.postgres.vectors import PgVectorStore
from hermes.store.rows import (
    SCOPE_STATS_SQL,
    message_row,
    scope_stats_from,
    session_row,
    title_patterns,
    titled,
)

_SESSION_COLUMNS = (
    "scope, id, source, started_at, updated_at, title, parent_session_id, ended_at, "
    "message_count, input_tokens, output_tokens, last_prompt_tokens, system_prompt, user_turns"
)
_HIDDEN_SQL = (
    "SELECT start_idx, end_idx FROM hidden_messages WHERE scope = %s AND session_id = %s "
    "ORDER BY start_idx"
)
_MESSAGE_COLUMNS = (
    "id, scope, session_id, idx, role, content, timestamp, tool_calls, tool_call_id, "
    "tool_name, token_count, name, model"
)
_NOW = "extract(epoch from clock_timestamp())"
_TAKE_LEASE = f"""
INSERT INTO locks AS l (name, holder, replica, expires_at)
VALUES (%(name)s, %(holder)s, %(replica)s, {_NOW} + %(ttl)s)
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder, replica = excluded.replica, expires_at = excluded.expires_at
WHERE l.holder = excluded.holder OR l.expires_at <= {_NOW}
   OR (l.replica IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM pg_locks p
        WHERE p.locktype = 'advisory' AND p.granted AND p.objsubid = 2
          AND p.classid = {PRESENCE_NAMESPACE}::oid AND p.objid = l.replica::oid
          AND p.database = (SELECT oid FROM pg_database WHERE datname = current_database())))
RETURNING 1
"""


def _message(row: tuple[Any, ...]) -> MessageRecord:
    (mid, scope, sid, idx, role, content, ts, calls, call_id, tool, tokens, name, model) = row
    return MessageRecord(
        id=int(mid),
        scope=scope,
        session_id=sid,
        index=int(idx),
        role=role,
        content=content,
        timestamp=float(ts),
        tool_calls=json.loads(calls) if calls else None,
        tool_call_id=call_id,
        tool_name=tool,
        token_count=tokens,
        name=name,
        model=model,
    )


class PostgresStore(StoreParts, PgApiKeysMixin):
    """Sessions, messages, search, leases and shared state in one PostgreSQL database."""

    def __init__(self, url: str, *, pool_size: int = 10, migrate: bool = True) -> None:
        self._db = Database(url, pool_size=pool_size)
        self.url = self._db.shown
        self._presence = Presence(self._db)
        self.documents = PgDocuments(self._db)
        self.idempotency = PgIdempotency(self._db)
        self.search = PgSearch(self._db)
        self.vectors = PgVectorStore(self._db)
        self.runs = PgRunStore(self._db)
        self.note_history = PgNoteHistory(self._db)
        self.usage = PgUsageStore(self._db)
        self.records = PgRecords(self._db)
        self._backlog = BacklogThread(Backlog(self._index_piece), "hermes-search-index")
        try:
            self._db.open()
            if migrate:
                self._db.migrate()
        except BaseException:
            self._db.close()
            raise

    def _index_piece(self) -> int:
        """One piece of the background catch-up (`index_backlog`); how many still wait."""
        with self._db.transaction() as conn:
            catch_up(conn, sessions=PIECE_SESSIONS, wait=False)
            return count_waiting(conn, DUE_AT)

    # -- sessions -------------------------------------------------------------------------

    def ensure_session(
        self,
        scope: str,
        session_id: str,
        *,
        source: str,
        title: str | None = None,
        parent_session_id: str | None = None,
        started_at: float | None = None,
    ) -> SessionRecord:
        existing = self.get_session(scope, session_id)
        if existing is not None:
            return existing
        with self._db.connection() as conn:
            return self._ensure_in(
                conn, scope, session_id, source, title, parent_session_id, started_at
            )

    @staticmethod
    def _ensure_in(
        conn: psycopg.Connection[Any],
        scope: str,
        session_id: str,
        source: str,
        title: str | None = None,
        parent: str | None = None,
        started_at: float | None = None,
    ) -> SessionRecord:
        now = time.time()
        conn.execute(
            "INSERT INTO sessions (scope, id, source, title, parent_session_id, started_at, "
            "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (scope, session_id, source, title, parent, started_at or now, now),
        )
        row = conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE scope = %s AND id = %s",
            (scope, session_id),
        ).fetchone()
        if row is None:  # deleted between the two statements
            raise StoreError(f"session {session_id!r} was deleted while it was being opened")
        return SessionRecord(*row)

    def begin_turn(
        self, scope: str, session_id: str, *, source: str, lease: Lease, ttl_seconds: float
    ) -> SessionRecord | None:
        replica = self._presence.ensure()
        with self._db.transaction() as conn:
            if not self._take(conn, lease.name, lease.holder, ttl_seconds, replica):
                return None
            session = self._ensure_in(conn, scope, session_id, source)
            rows = conn.execute(_HIDDEN_SQL, (scope, session_id)).fetchall()
            session.hidden = [(int(r[0]), int(r[1])) for r in rows]
            return session

    def get_session(self, scope: str, session_id: str) -> SessionRecord | None:
        rows = self._db.fetch(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE scope = %s AND id = %s",
            (scope, session_id),
        )
        return SessionRecord(*rows[0]) if rows else None

    def list_sessions(
        self, scope: str, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]:
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE scope = %s"
        params: list[Any] = [scope]
        if source:
            sql += " AND source = %s"
            params.append(source)
        sql += " ORDER BY updated_at DESC, id LIMIT %s OFFSET %s"
        return [SessionRecord(*r) for r in self._db.fetch(sql, (*params, limit, offset))]

    def sessions_titled(self, scope: str, words: Sequence[str], limit: int) -> list[SessionRecord]:
        patterns = title_patterns(list(words))
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE scope = %s AND title IS NOT NULL"
        sql += " AND title ILIKE %s ESCAPE '\\'" * len(patterns)
        sql += " ORDER BY updated_at DESC, id"
        if len(patterns) == len(words):  # SQL decided every word: no need to read more
            sql += f" LIMIT {int(limit)}"
        rows = self._db.fetch(sql, (scope, *patterns))
        return titled([SessionRecord(*r) for r in rows], list(words), limit)

    def list_scopes(self) -> list[str]:
        return [r[0] for r in self._db.fetch("SELECT DISTINCT scope FROM sessions ORDER BY 1")]

    def set_system_prompt(self, scope: str, session_id: str, prompt: str) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE sessions SET system_prompt = %s WHERE scope = %s AND id = %s",
                (prompt, scope, session_id),
            )

    def set_session_title(self, scope: str, session_id: str, title: str | None) -> bool:
        with self._db.connection() as conn:
            cur = conn.execute(
                "UPDATE sessions SET title = %s WHERE scope = %s AND id = %s",
                (title, scope, session_id),
            )
            return cur.rowcount > 0

    def delete_session(self, scope: str, session_id: str) -> bool:
        with self._db.connection() as conn:
            cur = conn.execute(
                "DELETE FROM sessions WHERE scope = %s AND id = %s", (scope, session_id)
            )
            return cur.rowcount > 0

    def delete_scope(self, scope: str) -> int:
        with self._db.transaction() as conn:
            removed = conn.execute("DELETE FROM sessions WHERE scope = %s", (scope,)).rowcount
            conn.execute("DELETE FROM vector_removals WHERE scope = %s", (scope,))
            conn.execute("DELETE FROM idempotency_keys WHERE scope = %s", (scope,))
            conn.execute("DELETE FROM model_usage WHERE scope = %s", (scope,))
            return removed

    def scope_stats(self) -> list[ScopeStats]:
        return scope_stats_from(self._db.fetch(SCOPE_STATS_SQL))

    # -- messages -------------------------------------------------------------------------

    def append_messages(
        self,
        scope: str,
        session_id: str,
        messages: list[NewMessage],
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        last_prompt_tokens: int | None = None,
        system_prompt: str | None = None,
        release: Lease | None = None,
    ) -> list[MessageRecord]:
        """All or none, positions taken under the session row's lock; search vectors and
        the lease release ride in the same transaction."""
        if not messages:
            if release is not None:
                self.release_lock(release.name, release.holder)
            return []
        now = time.time()
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT message_count FROM sessions WHERE scope = %s AND id = %s FOR UPDATE",
                (scope, session_id),
            ).fetchone()
            if row is None:
                raise StoreError(f"session {session_id!r} does not exist in scope {scope!r}")
            first = int(row[0])
            records = self._insert(conn, scope, session_id, first, messages, now)
            last_ts = max([now, *(r.timestamp for r in records)])
            conn.execute(
                "UPDATE sessions SET message_count = message_count + %s, "
                "user_turns = user_turns + %s, updated_at = GREATEST(updated_at, %s), "
                "input_tokens = input_tokens + %s, output_tokens = output_tokens + %s, "
                "last_prompt_tokens = COALESCE(%s, last_prompt_tokens), "
                "system_prompt = COALESCE(system_prompt, %s) WHERE scope = %s AND id = %s",
                (
                    len(messages),
                    sum(m.role == "user" for m in messages),
                    last_ts,
                    prompt_tokens,
                    completion_tokens,
                    last_prompt_tokens,
                    system_prompt,
                    scope,
                    session_id,
                ),
            )
            if release is not None:
                self._drop(conn, release.name, release.holder)
        self._backlog.added(len(messages))
        return records

    @staticmethod
    def _insert(
        conn: psycopg.Connection[Any],
        scope: str,
        session_id: str,
        first: int,
        messages: list[NewMessage],
        now: float,
    ) -> list[MessageRecord]:
        rows = [
            (
                scope,
                session_id,
                first + i,
                m.role,
                m.content,
                json.dumps(m.tool_calls) if m.tool_calls else None,
                m.tool_call_id,
                m.tool_name,
                m.timestamp if m.timestamp is not None else now,
                m.token_count,
                m.name,
                m.model,
            )
            for i, m in enumerate(messages)
        ]
        values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows))
        cur = conn.execute(
            "INSERT INTO messages (scope, session_id, idx, role, content, tool_calls, "
            f"tool_call_id, tool_name, timestamp, token_count, name, model) VALUES {values} "
            f"RETURNING {_MESSAGE_COLUMNS}",
            [v for r in rows for v in r],
        )
        return sorted((_message(r) for r in cur.fetchall()), key=lambda m: m.index)

    def get_messages(
        self, scope: str, session_id: str, *, start: int = 0, end: int | None = None
    ) -> list[MessageRecord]:
        sql = (
            f"SELECT {_MESSAGE_COLUMNS} FROM messages "
            "WHERE scope = %s AND session_id = %s AND idx >= %s"
        )
        params: list[Any] = [scope, session_id, start]
        if end is not None:
            sql += " AND idx < %s"
            params.append(end)
        return [_message(r) for r in self._db.fetch(sql + " ORDER BY idx", params)]

    def count_messages(self, scope: str | None = None) -> int:
        if scope is None:
            return int(self._db.fetch("SELECT count(*) FROM messages")[0][0])
        return int(self._db.fetch("SELECT count(*) FROM messages WHERE scope = %s", (scope,))[0][0])

    def import_sessions(self, scope: str, sessions: Sequence[NewSession]) -> list[str]:
        """Bulk load in one transaction (pipelined inserts, one indexing pass per import);
        ids the scope already has, or that repeat within `sessions`, are skipped."""
        ids = [s.id for s in sessions]
        now = time.time()
        with self._db.transaction() as conn:
            # the same advisory key as a turn would not help here; the primary key refuses a
            # concurrent duplicate import, which then fails whole (nothing half-imported)
            seen = {
                str(r[0])
                for r in conn.execute(
                    "SELECT id FROM sessions WHERE scope = %s AND id = ANY(%s)", (scope, ids)
                )
            }
            fresh: list[NewSession] = []
            for s in sessions:
                if s.id not in seen:
                    seen.add(s.id)
                    fresh.append(s)
            if not fresh:
                return []
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO sessions (scope, id, source, title, started_at, updated_at, "
                    "message_count, user_turns) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [session_row(scope, s, now) for s in fresh],
                )
                cur.executemany(
                    "INSERT INTO messages (scope, session_id, idx, role, content, tool_calls, "
                    "tool_call_id, tool_name, timestamp, token_count, name, model) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        message_row(scope, s.id, i, m, now)
                        for s in fresh
                        for i, m in enumerate(s.messages)
                    ],
                )
            index_sessions(conn, scope, [s.id for s in fresh])
        return [s.id for s in fresh]

    # -- leases ---------------------------------------------------------------------------

    def acquire_lock(self, name: str, holder: str, ttl_seconds: float) -> bool:
        replica = self._presence.ensure()
        with self._db.connection() as conn:
            return self._take(conn, name, holder, ttl_seconds, replica)

    def release_lock(self, name: str, holder: str) -> None:
        with self._db.connection() as conn:
            self._drop(conn, name, holder)

    def renew_lock(self, name: str, holder: str, ttl_seconds: float) -> bool:
        """The heartbeat: extend a lease `holder` still holds; False once it is not theirs."""
        with self._db.connection() as conn:
            cur = conn.execute(
                f"UPDATE locks SET expires_at = {_NOW} + %s WHERE name = %s AND holder = %s",
                (ttl_seconds, name, holder),
            )
            return cur.rowcount > 0

    @staticmethod
    def _take(
        conn: psycopg.Connection[Any], name: str, holder: str, ttl: float, replica: int
    ) -> bool:
        """Free, expired, ours, or its replica's presence lock is gone (the process died,
        on any host); else a holder on this host whose process is gone (`holder_is_dead`)."""
        params = {"name": name, "holder": holder, "replica": replica, "ttl": ttl}
        if conn.execute(_TAKE_LEASE, params).fetchone() is not None:
            return True
        row = conn.execute("SELECT holder FROM locks WHERE name = %s", (name,)).fetchone()
        if row is None or not holder_is_dead(str(row[0])):
            return False
        taken = conn.execute(
            f"UPDATE locks SET holder = %s, replica = %s, expires_at = {_NOW} + %s "
            "WHERE name = %s AND holder = %s RETURNING 1",
            (holder, replica, ttl, name, row[0]),
        )
        return taken.fetchone() is not None

    @staticmethod
    def _drop(conn: psycopg.Connection[Any], name: str, holder: str) -> None:
        conn.execute("DELETE FROM locks WHERE name = %s AND holder = %s", (name, holder))

    # -- compactions and learned windows --------------------------------------------------

    def add_compaction(
        self, scope: str, session_id: str, *, head_end: int, upto_idx: int, summary: str, kind: str
    ) -> Compaction:
        now = time.time()
        with self._db.transaction() as conn:
            conn.execute(
                "SELECT 1 FROM sessions WHERE scope = %s AND id = %s FOR UPDATE",
                (scope, session_id),
            )
            row = conn.execute(
                "INSERT INTO compactions (scope, session_id, seq, head_end, upto_idx, summary, "
                "kind, created_at) SELECT %s, %s, COALESCE(MAX(seq), 0) + 1, %s, %s, %s, %s, %s "
                "FROM compactions WHERE scope = %s AND session_id = %s RETURNING seq",
                (scope, session_id, head_end, upto_idx, summary, kind, now, scope, session_id),
            ).fetchone()
        assert row is not None
        return Compaction(scope, session_id, int(row[0]), head_end, upto_idx, summary, kind, now)

    def latest_compaction(self, scope: str, session_id: str) -> Compaction | None:
        rows = self._db.fetch(
            "SELECT scope, session_id, seq, head_end, upto_idx, summary, kind, created_at "
            "FROM compactions WHERE scope = %s AND session_id = %s ORDER BY seq DESC LIMIT 1",
            (scope, session_id),
        )
        return Compaction(*rows[0]) if rows else None

    def compression_markers(self, scope: str, session_id: str) -> list[dict[str, Any]]:
        rows = self._db.fetch(
            "SELECT seq, head_end, upto_idx, kind, created_at, length(summary) FROM compactions "
            "WHERE scope = %s AND session_id = %s ORDER BY seq",
            (scope, session_id),
        )
        keys = ("seq", "head_end", "upto_index", "kind", "created_at", "summary_chars")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def hide_messages(self, scope: str, session_id: str, *, start: int, end: int) -> None:
        if not 0 <= start < end:
            raise StoreError(f"cannot hide messages [{start}, {end}): not a range of messages")
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO hidden_messages (scope, session_id, start_idx, end_idx, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (scope, session_id, start_idx) DO UPDATE "
                "SET end_idx = GREATEST(hidden_messages.end_idx, excluded.end_idx)",
                (scope, session_id, start, end, time.time()),
            )

    def hidden_ranges(self, scope: str, session_id: str) -> list[tuple[int, int]]:
        rows = self._db.fetch(_HIDDEN_SQL, (scope, session_id))
        return [(int(r[0]), int(r[1])) for r in rows]

    def get_model_limit(self, model: str) -> int | None:
        rows = self._db.fetch("SELECT context_length FROM model_limits WHERE model = %s", (model,))
        return int(rows[0][0]) if rows else None

    def set_model_limit(self, model: str, context_length: int) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO model_limits (model, context_length, learned_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (model) DO UPDATE SET context_length = LEAST("
                "model_limits.context_length, excluded.context_length), "
                "learned_at = excluded.learned_at",
                (model, context_length, time.time()),
            )

    # -- operations -----------------------------------------------------------------------

    def health(self, *, deep: bool = True) -> dict[str, Any]:
        started = time.perf_counter()  # (every check here is cheap: `deep` changes nothing)
        try:
            status = self._db.schema_status()
        except StoreError as exc:
            return {"ok": False, "backend": "postgresql", "url": self.url, "error": str(exc)}
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return {
            "ok": not status.pending,
            "backend": "postgresql",
            "url": self.url,
            "latency_ms": latency_ms,
            "schema_version": status.version,
            "pending_migrations": [v for v, _ in status.pending],
            "pool": self._db.pool_stats(),
        }

    def schema_status(self) -> SchemaStatus:
        return self._db.schema_status()

    def migrate(self) -> list[int]:
        return self._db.migrate()

    def close(self) -> None:
        self._backlog.close()
        self._presence.close()
        self._db.close()
