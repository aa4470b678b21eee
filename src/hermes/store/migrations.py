"""Numbered schema migrations for state.db. Append only: never edit one that has shipped."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from hermes.store.api_keys import M009_API_KEYS
from hermes.store.note_history import M012_NOTE_VERSIONS
from hermes.store.records import M018_SHARED_RECORDS, M019_QUOTA_USES
from hermes.store.runs import M013_RUNS
from hermes.store.search_schema import (
    M003_MESSAGE_WINDOWS,
    M005_MESSAGE_VIEWS,
    M006_SPEAKERS,
    M023_DEFERRED_INDEX,
)
from hermes.store.usage import M017_MODEL_USAGE, SESSION_INDEX
from hermes.store.vectors import (
    M010_MESSAGE_VECTORS,
    M011_VECTOR_REMOVALS,
    M022_WINDOW_VECTORS,
)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


def _script(sql: str) -> Callable[[sqlite3.Connection], None]:
    def run(conn: sqlite3.Connection) -> None:
        for statement in _split(sql):
            conn.execute(statement)

    return run


def _split(sql: str) -> list[str]:
    """Split a script on ';' at statement ends, keeping trigger bodies (BEGIN … END;) whole."""
    statements, buf, depth = [], [], 0
    for line in sql.splitlines():
        stripped = line.strip().upper()
        buf.append(line)
        if stripped.endswith("BEGIN"):
            depth += 1
        if stripped.startswith("END;"):
            depth -= 1
        if stripped.endswith(";") and depth == 0:
            statements.append("\n".join(buf).strip())
            buf = []
    if "".join(buf).strip():
        statements.append("\n".join(buf).strip())
    return statements


M001_INITIAL = """
CREATE TABLE sessions (
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    source TEXT NOT NULL,
    title TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    ended_at REAL,
    message_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, id)
);
CREATE INDEX sessions_scope_updated ON sessions (scope, updated_at DESC);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    session_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT,
    tool_calls TEXT,
    tool_call_id TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    UNIQUE (scope, session_id, idx),
    FOREIGN KEY (scope, session_id) REFERENCES sessions (scope, id) ON DELETE CASCADE
);
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content='messages', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
END;
"""

M002_PROMPTS_AND_LOCKS = """
ALTER TABLE sessions ADD COLUMN system_prompt TEXT;
ALTER TABLE sessions ADD COLUMN last_prompt_tokens INTEGER;
CREATE TABLE locks (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at REAL NOT NULL
);
"""

M004_COMPACTIONS = """
CREATE TABLE compactions (
    scope TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    head_end INTEGER NOT NULL,
    upto_idx INTEGER NOT NULL,
    summary TEXT NOT NULL,
    kind TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (scope, session_id, seq),
    FOREIGN KEY (scope, session_id) REFERENCES sessions (scope, id) ON DELETE CASCADE
);
ALTER TABLE sessions ADD COLUMN user_turns INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET user_turns = (
    SELECT COUNT(*) FROM messages m
    WHERE m.scope = sessions.scope AND m.session_id = sessions.id AND m.role = 'user'
);
CREATE TABLE model_limits (
    model TEXT PRIMARY KEY,
    context_length INTEGER NOT NULL,
    learned_at REAL NOT NULL
);
"""


def _pausable_triggers(*scripts: str) -> str:
    """Migration 7: every search trigger stands aside while `search_index_paused` has a row.

    A bulk import inserts that row, its sessions and messages, deletes the row and indexes
    the new rows in one statement per view, all in one transaction: other connections never
    see the pause, and the index is built once per message instead of once per neighbour.
    """
    out = ["CREATE TABLE search_index_paused (one INTEGER PRIMARY KEY CHECK (one = 1));"]
    latest: dict[str, str] = {}
    for script in scripts:
        for statement in _split(script):
            if statement.upper().startswith("CREATE TRIGGER"):
                latest[statement.split()[2]] = statement
    for name, statement in latest.items():
        if " ON sessions " in statement:
            continue  # deleting sessions is never paused
        head, body = statement.split(" BEGIN\n", 1)
        if "\nWHEN " not in head and " WHEN " not in head:
            raise AssertionError(f"trigger {name} has no WHEN clause")
        head = head.replace("WHEN ", "WHEN NOT EXISTS (SELECT 1 FROM search_index_paused) AND ", 1)
        out += [f"DROP TRIGGER {name};", f"{head} BEGIN\n{body}"]
    return "\n".join(out) + "\n"


M007_PAUSABLE = _pausable_triggers(M005_MESSAGE_VIEWS, M006_SPEAKERS)

M008_HIDDEN_MESSAGES = """
CREATE TABLE hidden_messages (
    scope TEXT NOT NULL,
    session_id TEXT NOT NULL,
    start_idx INTEGER NOT NULL,
    end_idx INTEGER NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (scope, session_id, start_idx),
    FOREIGN KEY (scope, session_id) REFERENCES sessions (scope, id) ON DELETE CASCADE
);
"""

M020_MESSAGES_SEARCHABLE_INDEX = """
CREATE INDEX messages_searchable ON messages (id)
WHERE role IN ('user', 'assistant') AND coalesce(content, '') <> '';
"""
"""Migration 20: the messages the search views index (`message_exact`'s WHERE, word for
word), so /health counts them from this small index (sqlite_health.SEARCHABLE_COUNT)
instead of reading every message's text: ~0.5 s → ~0.1 s at a million messages on a loaded
machine, paid by the dashboard's Status page once per health cache (5 s)."""

M021_MESSAGE_MODELS = f"""
ALTER TABLE messages ADD COLUMN model TEXT;
{SESSION_INDEX}
"""
"""Migration 21: which model wrote each assistant message (a fallback may answer instead of
the configured model); NULL for other roles and for messages stored before."""

MIGRATIONS: list[Migration] = [
    Migration(1, "initial", _script(M001_INITIAL)),
    Migration(2, "prompts_and_locks", _script(M002_PROMPTS_AND_LOCKS)),
    Migration(3, "message_windows", _script(M003_MESSAGE_WINDOWS)),
    Migration(4, "compactions", _script(M004_COMPACTIONS)),
    Migration(5, "message_views", _script(M005_MESSAGE_VIEWS)),
    Migration(6, "speakers", _script(M006_SPEAKERS)),
    Migration(7, "pausable_search_triggers", _script(M007_PAUSABLE)),
    Migration(8, "hidden_messages", _script(M008_HIDDEN_MESSAGES)),
    Migration(9, "api_keys", _script(M009_API_KEYS)),
    Migration(10, "message_vectors", _script(M010_MESSAGE_VECTORS)),
    Migration(11, "vector_removals", _script(M011_VECTOR_REMOVALS)),
    Migration(12, "note_versions", _script(M012_NOTE_VERSIONS)),
    Migration(13, "runs", _script(M013_RUNS)),
    Migration(17, "model_usage", _script(M017_MODEL_USAGE)),
    Migration(18, "shared_records", _script(M018_SHARED_RECORDS)),
    Migration(19, "quota_uses", _script(M019_QUOTA_USES)),
    Migration(20, "messages_searchable_index", _script(M020_MESSAGES_SEARCHABLE_INDEX)),
    Migration(21, "message_models", _script(M021_MESSAGE_MODELS)),
    Migration(22, "window_vectors", _script(M022_WINDOW_VECTORS)),
    Migration(23, "search_index_catches_up", _script(M023_DEFERRED_INDEX)),
]


def _ensure_table(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    _ensure_table(conn)
    return {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}


def current_version(conn: sqlite3.Connection) -> int:
    return max(applied_versions(conn), default=0)


def migrate(conn: sqlite3.Connection, migrations: list[Migration] | None = None) -> list[int]:
    """Apply every migration not yet recorded, in order, each in its own transaction."""
    migrations = MIGRATIONS if migrations is None else migrations
    applied: list[int] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        have = applied_versions(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    for migration in sorted(migrations, key=lambda m: m.version):
        if migration.version in have:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # another process may have migrated while we waited for the write lock
            if migration.version in applied_versions(conn):
                conn.execute("COMMIT")
                continue
            migration.apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time()),
            )
            conn.execute("COMMIT")
            applied.append(migration.version)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied
