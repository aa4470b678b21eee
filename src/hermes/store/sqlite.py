"""SQLite implementation of the Store contract (WAL, busy timeout, migrations, FTS5)."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hermes.store.api_keys import ApiKeyStoreMixin
from hermes.store.base import (
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
from hermes.store.compactions import CompactionStoreMixin
from hermes.store.group_commit import GroupCommit, Outcome
from hermes.store.index_backlog import Backlog
from hermes.store.leases import holder_is_dead
from hermes.store.migrations import (
    MIGRATIONS,
    Migration,
    applied_versions,
    migrate,
)
from hermes.store.note_history import SQLiteNoteHistory
from hermes.store.records import SQLiteRecords
from hermes.store.rows import SCOPE_STATS_SQL, scope_stats_from, title_patterns, titled
from hermes.store.rows import message_row as _message_row
from hermes.store.rows import session_row as _session_row
from hermes.store.runs import SQLiteRunStore
from hermes.store.search_catchup import catch_up, hold_all, index_piece, waiting
from hermes.store.search_index import SQLiteSearch, index_new_sessions
from hermes.store.search_schema import SEARCH_TABLES
from hermes.store.sqlite_health import SQLiteHealthMixin
from hermes.store.urls import sqlite_url
from hermes.store.usage import SQLiteUsageStore
from hermes.store.vectors import SQLiteVectorStore

_SESSION_COLUMNS = (
    "scope, id, source, started_at, updated_at, title, parent_session_id, ended_at, "
    "message_count, input_tokens, output_tokens, last_prompt_tokens, system_prompt, user_turns"
)
_MESSAGE_COLUMNS = (
    "id, scope, session_id, idx, role, content, timestamp, tool_calls, tool_call_id, "
    "tool_name, token_count, name, model"
)
_OPEN_TIMEOUT_S = 30.0
_BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for another process's write lock (on the writer's thread)."""

T = TypeVar("T")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SQLiteStore(StoreParts, CompactionStoreMixin, SQLiteHealthMixin, ApiKeyStoreMixin):
    """One connection guarded by a lock; writes in BEGIN IMMEDIATE transactions."""

    def __init__(self, path: Path | str, *, migrations: list[Migration] | None = None) -> None:
        self.path = Path(path)
        self.url = sqlite_url(self.path)
        self.documents = None
        self.idempotency = None  # notes and jobs are files in the home
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists()
        try:
            self._conn = self._connect(MIGRATIONS if migrations is None else migrations)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot open the state database: {exc}") from None
        if fresh:
            os.chmod(self.path, 0o600)
        self._lock = threading.RLock()
        self._batching = False
        """Set while `write_together` holds the lock: a write is then a savepoint in its
        transaction instead of a transaction of its own."""
        self._backlog = Backlog(self._index_piece, self._left_waiting())
        self.group_commit = GroupCommit(
            self.write_together, idle=self._backlog, here=self.write_here
        )
        self._search = SQLiteSearch(self._conn, self._lock)
        self.search = self._search
        self.vectors = SQLiteVectorStore(self._conn, self._lock)
        self.runs = SQLiteRunStore(self._conn, self._lock)
        self.note_history = SQLiteNoteHistory(self._conn, self._lock)
        self.usage = SQLiteUsageStore(self._conn, self._lock)
        self.records = SQLiteRecords(self._conn, self._lock)

    def _connect(self, migrations: list[Migration]) -> sqlite3.Connection:
        """Open, switch to WAL and migrate, retrying while sibling processes do the same.

        Several processes opening a fresh database at once (serve + cron + CLI) can get
        SQLITE_BUSY straight away from the WAL switch or the schema check: SQLite skips the
        busy handler there to avoid deadlock, so the wait has to happen here.
        """
        deadline = time.monotonic() + _OPEN_TIMEOUT_S
        delay = 0.005
        while True:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=_BUSY_TIMEOUT_MS / 1000,
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                migrate(conn, migrations)
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                if not _is_busy(exc) or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
            except BaseException:
                conn.close()
                raise

    def _index_piece(self) -> int:
        with self._write() as conn:
            return index_piece(conn)

    def _left_waiting(self) -> int:
        """Messages a previous run stored that still wait for the search index (0 on a
        schema from before migration 23, which tests open: its triggers index at once)."""
        try:
            upto, last = waiting(self._conn)
        except sqlite3.OperationalError:
            return 0
        return last - upto

    # -- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._batching:
                yield from self._savepoint()
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    def _savepoint(self) -> Iterator[sqlite3.Connection]:
        """One write inside `write_together`'s transaction, undone alone if it raises."""
        self._conn.execute("SAVEPOINT write")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK TO write")
            self._conn.execute("RELEASE write")
            raise
        else:
            self._conn.execute("RELEASE write")

    def write_together(self, calls: Sequence[Callable[[], Any]]) -> list[Outcome[Any]]:
        """Run store calls in one transaction (`group_commit`'s writer): each call's writes
        in a savepoint, so one that raises is undone alone; when the commit fails, nothing
        of the batch is kept and the error is raised. A single call runs as it would alone."""
        if len(calls) == 1:
            try:
                return [Outcome(calls[0]())]
            except Exception as exc:
                return [Outcome(error=exc)]
        outcomes: list[Outcome[Any]] = []
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._batching = True
            try:
                for call in calls:
                    try:
                        outcomes.append(Outcome(call()))
                    except Exception as exc:
                        if not self._conn.in_transaction:  # SQLite gave the whole batch up
                            raise StoreError(f"a batch of writes was rolled back: {exc}") from exc
                        outcomes.append(Outcome(error=exc))
                self._batching = False
                self._conn.execute("COMMIT")
            except BaseException:
                self._batching = False
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        return outcomes

    def write_here(self, call: Callable[[], T]) -> Outcome[T] | None:
        """Run a write on this thread if it needs no waiting (`GroupCommit.run(here=True)`):
        None, having changed nothing, when another thread holds the store or another
        process holds the database's write lock. SQLite's busy handler is off meanwhile,
        so the caller's event loop never sleeps in it. Any other error is the call's own,
        raised to the caller as the writer would."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            changes = self._conn.total_changes
            self._conn.execute("PRAGMA busy_timeout = 0")
            try:
                return Outcome(call())
            except sqlite3.OperationalError as exc:
                if _is_busy(exc) and self._conn.total_changes == changes:
                    return None  # nothing was written: the writer waits for its turn
                raise
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        finally:
            self._lock.release()

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection, for store extensions in this package (search, compression)."""
        return self._conn

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @staticmethod
    def _session(row: tuple[Any, ...]) -> SessionRecord:
        return SessionRecord(*row)

    @staticmethod
    def _message(row: tuple[Any, ...]) -> MessageRecord:
        (
            mid,
            scope,
            sid,
            idx,
            role,
            content,
            ts,
            tool_calls,
            tool_call_id,
            tool_name,
            tokens,
            name,
            model,
        ) = row
        return MessageRecord(
            id=mid,
            scope=scope,
            session_id=sid,
            index=idx,
            role=role,
            content=content,
            timestamp=ts,
            tool_calls=json.loads(tool_calls) if tool_calls else None,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            token_count=tokens,
            name=name,
            model=model,
        )

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
        if existing is not None:  # the common case costs a read, not a write transaction
            return existing
        with self._write() as conn:
            return self._ensure_session_in(
                conn,
                scope,
                session_id,
                source=source,
                title=title,
                parent_session_id=parent_session_id,
                started_at=started_at,
            )

    def _ensure_session_in(
        self,
        conn: sqlite3.Connection,
        scope: str,
        session_id: str,
        *,
        source: str,
        title: str | None = None,
        parent_session_id: str | None = None,
        started_at: float | None = None,
    ) -> SessionRecord:
        """The session row, created first if missing; the caller's transaction is open."""
        select = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE scope = ? AND id = ?"
        row = conn.execute(select, (scope, session_id)).fetchone()
        if row is None:
            now = time.time()
            conn.execute(
                "INSERT INTO sessions (scope, id, source, title, parent_session_id, "
                "started_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (scope, session_id, source, title, parent_session_id, started_at or now, now),
            )
            row = conn.execute(select, (scope, session_id)).fetchone()
        return self._session(row)

    def begin_turn(
        self, scope: str, session_id: str, *, source: str, lease: Lease, ttl_seconds: float
    ) -> SessionRecord | None:
        """Take the turn's lease and ensure its session in one write; None when busy."""
        with self._write() as conn:
            if not self._take_lease(conn, lease.name, lease.holder, ttl_seconds):
                return None
            session = self._ensure_session_in(conn, scope, session_id, source=source)
            session.hidden = self._hidden_in(conn, scope, session_id)
            return session

    def get_session(self, scope: str, session_id: str) -> SessionRecord | None:
        rows = self._read(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE scope = ? AND id = ?",
            (scope, session_id),
        )
        return self._session(rows[0]) if rows else None

    def list_sessions(
        self, scope: str, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]:
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE scope = ?"
        params: list[Any] = [scope]
        if source:
            sql += " AND source = ?"
            params.append(source)
        sql += " ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"
        params += [limit, offset]
        return [self._session(r) for r in self._read(sql, tuple(params))]

    def sessions_titled(self, scope: str, words: Sequence[str], limit: int) -> list[SessionRecord]:
        patterns = title_patterns(list(words))
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE scope = ? AND title IS NOT NULL"
        sql += " AND title LIKE ? ESCAPE '\\'" * len(patterns)
        sql += " ORDER BY updated_at DESC, id"
        if len(patterns) == len(words):  # SQL decided every word: no need to read more
            sql += f" LIMIT {int(limit)}"
        rows = self._read(sql, (scope, *patterns))
        return titled([self._session(r) for r in rows], list(words), limit)

    def set_system_prompt(self, scope: str, session_id: str, prompt: str) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE sessions SET system_prompt = ? WHERE scope = ? AND id = ?",
                (prompt, scope, session_id),
            )

    def set_session_title(self, scope: str, session_id: str, title: str | None) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET title = ? WHERE scope = ? AND id = ?",
                (title, scope, session_id),
            )
        return cur.rowcount > 0

    def delete_session(self, scope: str, session_id: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "DELETE FROM sessions WHERE scope = ? AND id = ?", (scope, session_id)
            )
        return cur.rowcount > 0

    def list_scopes(self) -> list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT scope FROM sessions ORDER BY scope")]

    def delete_scope(self, scope: str) -> int:
        """Remove every session (and so every message, search row and vector) of a scope,
        then its vector removal count (written by the vectors' delete trigger). The search
        tables are merged after: an FTS5 delete only marks the terms deleted, the words
        themselves stay in the index's segments until a merge (a full one: slow on a large
        index, and a scope is deleted rarely, to forget a user)."""
        with self._write() as conn:
            cur = conn.execute("DELETE FROM sessions WHERE scope = ?", (scope,))
            removed = cur.rowcount
            conn.execute("DELETE FROM vector_removals WHERE scope = ?", (scope,))
            conn.execute("DELETE FROM model_usage WHERE scope = ?", (scope,))
            if removed:
                for table in SEARCH_TABLES:
                    conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        return removed

    def scope_stats(self) -> list[ScopeStats]:
        return scope_stats_from(self._read(SCOPE_STATS_SQL))

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
        """Store messages at the end of a session (and the turn's token counts), all or none.

        `system_prompt` is kept only if the session has none yet; `release` is given up in
        the same transaction, so a turn's end costs one write, and a failed append keeps it.
        """
        if not messages:
            if release is not None:
                self.release_lock(release.name, release.holder)
            return []
        now = time.time()
        records: list[MessageRecord] = []
        with self._write() as conn:
            row = conn.execute(
                "SELECT message_count FROM sessions WHERE scope = ? AND id = ?",
                (scope, session_id),
            ).fetchone()
            if row is None:
                raise StoreError(f"session {session_id!r} does not exist in scope {scope!r}")
            next_idx = int(row[0])
            last_ts = now
            for offset, msg in enumerate(messages):
                ts = msg.timestamp if msg.timestamp is not None else now
                last_ts = ts
                tool_calls = json.dumps(msg.tool_calls) if msg.tool_calls else None
                cur = conn.execute(
                    "INSERT INTO messages (scope, session_id, idx, role, content, tool_calls, "
                    "tool_call_id, tool_name, timestamp, token_count, name, model) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        scope,
                        session_id,
                        next_idx + offset,
                        msg.role,
                        msg.content,
                        tool_calls,
                        msg.tool_call_id,
                        msg.tool_name,
                        ts,
                        msg.token_count,
                        msg.name,
                        msg.model,
                    ),
                )
                records.append(
                    MessageRecord(
                        id=int(cur.lastrowid or 0),
                        scope=scope,
                        session_id=session_id,
                        index=next_idx + offset,
                        role=msg.role,
                        content=msg.content,
                        timestamp=ts,
                        tool_calls=msg.tool_calls,
                        tool_call_id=msg.tool_call_id,
                        tool_name=msg.tool_name,
                        token_count=msg.token_count,
                        name=msg.name,
                        model=msg.model,
                    )
                )
            conn.execute(
                "UPDATE sessions SET message_count = message_count + ?, "
                "user_turns = user_turns + ?, "
                "updated_at = MAX(updated_at, ?), input_tokens = input_tokens + ?, "
                "output_tokens = output_tokens + ?, "
                "last_prompt_tokens = COALESCE(?, last_prompt_tokens), "
                "system_prompt = COALESCE(system_prompt, ?) WHERE scope = ? AND id = ?",
                (
                    len(messages),
                    sum(m.role == "user" for m in messages),
                    max(last_ts, now),
                    prompt_tokens,
                    completion_tokens,
                    last_prompt_tokens,
                    system_prompt,
                    scope,
                    session_id,
                ),
            )
            if release is not None:
                self._drop_lease(conn, release.name, release.holder)
        self._backlog.added(len(messages))
        return records

    def import_sessions(self, scope: str, sessions: Sequence[NewSession]) -> list[str]:
        """Bulk load in one transaction, indexed in one pass.

        Sessions whose id the scope already has (or that repeat within `sessions`) are
        skipped. Rows go in with `executemany`; the waiting messages are indexed first, then
        the new id range is indexed from the rows in hand (`index_new_sessions`: a message
        tokenised once per view, no neighbour looked up) and the mark moves past it.
        """
        with self._write() as conn:
            seen = self._existing_ids(conn, scope, [s.id for s in sessions])
            fresh: list[NewSession] = []
            for s in sessions:
                if s.id not in seen:
                    seen.add(s.id)
                    fresh.append(s)
            if not fresh:
                return []
            now = time.time()
            catch_up(conn)  # the rows indexed below start right after the mark
            before = self._last_message_id(conn)
            conn.executemany(
                "INSERT INTO sessions (scope, id, source, title, started_at, updated_at, "
                "message_count, user_turns) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [_session_row(scope, s, now) for s in fresh],
            )
            conn.executemany(
                "INSERT INTO messages (scope, session_id, idx, role, content, tool_calls, "
                "tool_call_id, tool_name, timestamp, token_count, name, model) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    _message_row(scope, s.id, i, m, now)
                    for s in fresh
                    for i, m in enumerate(s.messages)
                ),
            )
            index_new_sessions(conn, scope, before + 1, fresh)
            hold_all(conn)
        return [s.id for s in fresh]

    @staticmethod
    def _existing_ids(conn: sqlite3.Connection, scope: str, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT id FROM sessions WHERE scope = ? AND id IN ({marks})", (scope, *chunk)
            ).fetchall()
            found.update(r[0] for r in rows)
        return found

    @staticmethod
    def _last_message_id(conn: sqlite3.Connection) -> int:
        """The highest message id ever given out (AUTOINCREMENT keeps it in sqlite_sequence)."""
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
        return int(row[0]) if row else 0

    def get_messages(
        self, scope: str, session_id: str, *, start: int = 0, end: int | None = None
    ) -> list[MessageRecord]:
        sql = f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE scope = ? AND session_id = ? AND idx >= ?"
        params: list[Any] = [scope, session_id, start]
        if end is not None:
            sql += " AND idx < ?"
            params.append(end)
        sql += " ORDER BY idx"
        return [self._message(r) for r in self._read(sql, tuple(params))]

    def count_messages(self, scope: str | None = None) -> int:
        if scope is None:
            return int(self._read("SELECT COUNT(*) FROM messages")[0][0])
        return int(self._read("SELECT COUNT(*) FROM messages WHERE scope = ?", (scope,))[0][0])

    # -- cross-process locks ----------------------------------------------------------------

    def acquire_lock(self, name: str, holder: str, ttl_seconds: float) -> bool:
        """Take a named lease if free or expired (or already ours); never blocks."""
        with self._write() as conn:
            return self._take_lease(conn, name, holder, ttl_seconds)

    def release_lock(self, name: str, holder: str) -> None:
        with self._write() as conn:
            self._drop_lease(conn, name, holder)

    def renew_lock(self, name: str, holder: str, ttl_seconds: float) -> bool:
        """Extend a lease we still hold (the heartbeat); False once it is gone or taken."""
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE locks SET expires_at = ? WHERE name = ? AND holder = ?",
                (time.time() + ttl_seconds, name, holder),
            )
            return cur.rowcount > 0

    @staticmethod
    def _take_lease(conn: sqlite3.Connection, name: str, holder: str, ttl_seconds: float) -> bool:
        now = time.time()
        row = conn.execute(
            "SELECT holder, expires_at FROM locks WHERE name = ?", (name,)
        ).fetchone()
        if row is not None and row[0] != holder and row[1] > now and not holder_is_dead(row[0]):
            return False
        conn.execute(
            "INSERT INTO locks (name, holder, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
            "expires_at = excluded.expires_at",
            (name, holder, now + ttl_seconds),
        )
        return True

    @staticmethod
    def _drop_lease(conn: sqlite3.Connection, name: str, holder: str) -> None:
        conn.execute("DELETE FROM locks WHERE name = ? AND holder = ?", (name, holder))

    def schema_status(self) -> SchemaStatus:
        with self._lock:
            applied_versions(self._conn)  # creates the bookkeeping table if missing
            rows = self._conn.execute(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
            ).fetchall()
        have = {int(r[0]) for r in rows}
        return SchemaStatus(
            backend="sqlite",
            url=self.url,
            applied=[(int(v), str(n), float(t)) for v, n, t in rows],
            pending=[(m.version, m.name) for m in MIGRATIONS if m.version not in have],
        )

    def migrate(self) -> list[int]:
        with self._lock:
            return migrate(self._conn, MIGRATIONS)

    def close(self) -> None:
        self.group_commit.close()
        with self._lock:
            self._search.close()
            self._conn.close()
