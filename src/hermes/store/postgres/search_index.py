"""Writing PostgreSQL's search index: a message's vectors, at import and catching up with
the turns (the twin of SQLite's `search_catchup`; when it runs is `index_backlog`'s).

A turn inserts its messages with no search vectors; a conversational message whose
`window_vec` is NULL waits. A catch-up refreshes each waiting session from its first waiting
message (`refresh_vectors`, which also re-indexes the message before it: its window gained a
neighbour). Replicas may catch up at once: a session is refreshed under a transaction-scoped
advisory lock of its own, so two refreshes of one session never interleave (the later one
sees what the earlier committed). A search waits for that lock; the background skips a
session another replica holds.
"""

from __future__ import annotations

from typing import Any

import psycopg

from hermes.store.base import StoreError
from hermes.store.postgres.predicates import CONVERSATIONAL
from hermes.store.search_schema import AFTER_CHARS, BEFORE_CHARS, BODY_CHARS

WAITING = f"window_vec IS NULL AND {CONVERSATIONAL}"
"""A message the search index does not hold yet (migration 17's partial index)."""

M017_INDEX_CATCHES_UP = (
    f"CREATE INDEX messages_waiting ON messages (scope, session_id, idx) WHERE {WAITING};"
)

VECTORS_SQL = f"""
WITH conv AS (
    SELECT id, content, name,
        lag(content) OVER w AS before, lead(content) OVER w AS after
    FROM messages
    WHERE {{where}} AND {CONVERSATIONAL}
    WINDOW w AS (PARTITION BY scope, session_id ORDER BY idx)
)
UPDATE messages m SET
    body_vec = to_tsvector('english', left(conv.content, {BODY_CHARS})),
    exact_vec = to_tsvector('simple', left(conv.content, {BODY_CHARS})),
    window_vec =
        setweight(to_tsvector('english', coalesce(right(conv.before, {BEFORE_CHARS}), '')), 'C')
        || setweight(to_tsvector('english', left(conv.content, {BODY_CHARS})), 'A')
        || setweight(to_tsvector('english', coalesce(left(conv.after, {AFTER_CHARS}), '')), 'C')
        || setweight(to_tsvector('simple', coalesce(conv.name, '')), 'B')
FROM conv WHERE m.id = conv.id {{only}}
"""


def refresh_vectors(conn: psycopg.Connection[Any], scope: str, session_id: str, first: int) -> None:
    """Index the messages at positions ≥ `first`, and re-index the conversational message
    before them (its window's `after` changed)."""
    prev = conn.execute(
        f"SELECT idx FROM messages WHERE scope = %s AND session_id = %s AND idx < %s "
        f"AND {CONVERSATIONAL} ORDER BY idx DESC LIMIT 2",
        (scope, session_id, first),
    ).fetchall()
    lo = int(prev[-1][0]) if prev else first  # the window of prev[0] needs prev[1]
    update_from = int(prev[0][0]) if prev else first
    sql = VECTORS_SQL.format(
        where="scope = %s AND session_id = %s AND idx >= %s", only="AND m.idx >= %s"
    )
    conn.execute(sql.encode(), (scope, session_id, lo, update_from))


def index_sessions(conn: psycopg.Connection[Any], scope: str, session_ids: list[str]) -> None:
    """Index every message of whole sessions in one statement (bulk imports)."""
    sql = VECTORS_SQL.format(where="scope = %s AND session_id = ANY(%s)", only="")
    conn.execute(sql.encode(), (scope, session_ids))


PIECE_SESSIONS = 64
"""Sessions per piece of the background catch-up."""


def _scalar(conn: psycopg.Connection[Any], sql: str, params: Any = ()) -> Any:
    """The one value a one-row query gives."""
    row = conn.execute(sql, params).fetchone()
    if row is None:
        raise StoreError(f"no row from: {sql[:60]}")
    return row[0]


def _lock_key(scope: str, session_id: str) -> str:
    return f"hermes-search-index\x1f{scope}\x1f{session_id}"


def catch_up(
    conn: psycopg.Connection[Any],
    *,
    scope: str | None = None,
    sessions: int | None = None,
    wait: bool = True,
) -> int:
    """Index the waiting messages (of `scope`, of at most `sessions` sessions); how many
    sessions were refreshed. With `wait`, a session another transaction is refreshing is
    waited for (and its lock taken in a fixed order, so two waiting callers never deadlock);
    without, it is left to that one. The caller holds a transaction."""
    where = WAITING + (" AND scope = %s" if scope is not None else "")
    params: list[Any] = [scope] if scope is not None else []
    limit = ""
    if sessions is not None:
        limit, params = " LIMIT %s", [*params, sessions]
    rows = conn.execute(
        f"SELECT DISTINCT scope, session_id FROM messages WHERE {where} "
        f"ORDER BY scope, session_id{limit}",
        params,
    ).fetchall()
    done = 0
    for row_scope, session_id in rows:
        key = _lock_key(row_scope, session_id)
        if wait:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
        elif not _scalar(conn, "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", (key,)):
            continue
        # read after the lock: another replica may have refreshed it meanwhile
        first = _scalar(
            conn,
            f"SELECT min(idx) FROM messages WHERE scope = %s AND session_id = %s AND {WAITING}",
            (row_scope, session_id),
        )
        if first is not None:
            refresh_vectors(conn, row_scope, session_id, int(first))
            done += 1
    return done


def anything_waits(conn: psycopg.Connection[Any], scope: str | None = None) -> bool:
    """Whether any message (of `scope`) waits: one look at the partial index."""
    where = WAITING + (" AND scope = %s" if scope is not None else "")
    sql = f"SELECT EXISTS (SELECT 1 FROM messages WHERE {where})"
    return bool(_scalar(conn, sql, [scope] if scope is not None else []))


def count_waiting(conn: psycopg.Connection[Any], most: int) -> int:
    """How many messages wait, counted up to `most`."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM messages WHERE {WAITING} LIMIT %s) w"
    return int(_scalar(conn, sql, (most,)))
