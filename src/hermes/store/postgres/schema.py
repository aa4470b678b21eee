"""PostgreSQL schema as numbered migrations. Append only: never edit one that has shipped.

The tables mirror state.db's (same columns, same meaning) so `hermes db copy` moves rows one
to one. Search lives on the `messages` rows themselves: three tsvector columns (the message
stemmed, as written, and its conversational window with neighbours and speaker weighted
lower) kept by the store in the transaction that appends, each with a GIN index that also
holds the scope (btree_gin), and a trigram index (pg_trgm) over messages written in scripts
without spaces. Leases carry the replica that took them; a replica holds an advisory lock
for as long as its process lives, so a killed replica's leases are free at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes import unsegmented as scripts
from hermes.store.postgres.api_keys import M005_API_KEYS
from hermes.store.postgres.note_history import M007_NOTE_VERSIONS
from hermes.store.postgres.predicates import CONVERSATIONAL
from hermes.store.postgres.records import M013_SHARED_RECORDS, M014_QUOTA_USES
from hermes.store.postgres.runs import M008_RUNS
from hermes.store.postgres.search_index import M017_INDEX_CATCHES_UP
from hermes.store.postgres.usage import M012_MODEL_USAGE
from hermes.store.postgres.vectors import (
    M004_MESSAGE_VECTORS,
    M006_VECTOR_REMOVALS,
    M016_WINDOW_VECTORS,
)
from hermes.store.usage import SESSION_INDEX

# Scripts written without spaces between words (hermes.unsegmented, as in SQLite).
UNSEGMENTED = scripts.CLASS


@dataclass(frozen=True)
class PgMigration:
    version: int
    name: str
    sql: str


M001_INITIAL = f"""
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;
CREATE TABLE sessions (
    scope text NOT NULL,
    id text NOT NULL,
    source text NOT NULL,
    title text,
    parent_session_id text,
    started_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    ended_at double precision,
    message_count integer NOT NULL DEFAULT 0,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    last_prompt_tokens integer,
    system_prompt text,
    user_turns integer NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, id)
);
CREATE INDEX sessions_scope_updated ON sessions (scope, updated_at DESC);
CREATE TABLE messages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope text NOT NULL,
    session_id text NOT NULL,
    idx integer NOT NULL,
    role text NOT NULL,
    content text,
    tool_calls text,
    tool_call_id text,
    tool_name text,
    timestamp double precision NOT NULL,
    token_count integer,
    name text,
    body_vec tsvector,
    exact_vec tsvector,
    window_vec tsvector,
    unsegmented boolean GENERATED ALWAYS AS (
        {CONVERSATIONAL} AND content ~ '{UNSEGMENTED}'
    ) STORED,
    UNIQUE (scope, session_id, idx),
    FOREIGN KEY (scope, session_id) REFERENCES sessions (scope, id) ON DELETE CASCADE
);
CREATE INDEX messages_body_search ON messages USING gin (scope, body_vec);
CREATE INDEX messages_exact_search ON messages USING gin (scope, exact_vec);
CREATE INDEX messages_window_search ON messages USING gin (scope, window_vec);
CREATE INDEX messages_trigram_search ON messages USING gin (content gin_trgm_ops)
    WHERE unsegmented;
CREATE TABLE locks (
    name text PRIMARY KEY,
    holder text NOT NULL,
    replica bigint,
    expires_at double precision NOT NULL
);
CREATE TABLE compactions (
    scope text NOT NULL,
    session_id text NOT NULL,
    seq integer NOT NULL,
    head_end integer NOT NULL,
    upto_idx integer NOT NULL,
    summary text NOT NULL,
    kind text NOT NULL,
    created_at double precision NOT NULL,
    PRIMARY KEY (scope, session_id, seq),
    FOREIGN KEY (scope, session_id) REFERENCES sessions (scope, id) ON DELETE CASCADE
);
CREATE TABLE model_limits (
    model text PRIMARY KEY,
    context_length integer NOT NULL,
    learned_at double precision NOT NULL
);
"""

M002_SHARED_STATE = """
CREATE TABLE documents (
    scope text NOT NULL,
    name text NOT NULL,
    content text NOT NULL,
    updated_at double precision NOT NULL,
    PRIMARY KEY (scope, name)
);
CREATE INDEX documents_name ON documents (name, scope);
CREATE TABLE idempotency_keys (
    scope text NOT NULL,
    key text NOT NULL,
    fingerprint text NOT NULL,
    status integer,
    body bytea,
    headers text,
    created_at double precision NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
"""

M003_HIDDEN_MESSAGES = """
CREATE TABLE hidden_messages (
    scope text NOT NULL,
    session_id text NOT NULL,
    start_idx integer NOT NULL,
    end_idx integer NOT NULL,
    created_at double precision NOT NULL,
    PRIMARY KEY (scope, session_id, start_idx),
    FOREIGN KEY (scope, session_id) REFERENCES sessions (scope, id) ON DELETE CASCADE
);
"""

M015_MESSAGE_MODELS = f"""
ALTER TABLE messages ADD COLUMN model text;
{SESSION_INDEX}
"""
"""Migration 15: which model wrote each assistant message (SQLite's migration 21)."""

MIGRATIONS: list[PgMigration] = [
    PgMigration(1, "initial", M001_INITIAL),
    PgMigration(2, "shared_state", M002_SHARED_STATE),
    PgMigration(3, "hidden_messages", M003_HIDDEN_MESSAGES),
    PgMigration(4, "message_vectors", M004_MESSAGE_VECTORS),
    PgMigration(5, "api_keys", M005_API_KEYS),
    PgMigration(6, "vector_removals", M006_VECTOR_REMOVALS),
    PgMigration(7, "note_versions", M007_NOTE_VERSIONS),
    PgMigration(8, "runs", M008_RUNS),
    PgMigration(12, "model_usage", M012_MODEL_USAGE),
    PgMigration(13, "shared_records", M013_SHARED_RECORDS),
    PgMigration(14, "quota_uses", M014_QUOTA_USES),
    PgMigration(15, "message_models", M015_MESSAGE_MODELS),
    PgMigration(16, "window_vectors", M016_WINDOW_VECTORS),
    PgMigration(17, "search_index_catches_up", M017_INDEX_CATCHES_UP),
]
