"""Writing PostgreSQL's search index: a message's vectors, at import and catching up with
the turns (the twin of SQLite's `search_catchup`; when it runs is `index_backlog`'s).

A turn inserts its messages with no search vectors; a conversational message whose
`window_vec` is NULL waits. A catch-up refreshes each waiting session from its first waiting
message, and re-indexes the message before it (its window gained a neighbour): one statement
for all the sessions of a piece. Replicas may catch up at once: a session is refreshed under
a transaction-scoped advisory lock of its own, so two refreshes of one session never
interleave (the later one sees what the earlier committed). A search waits for that lock;
the background skips a session another replica holds.
"""

from __future__ import annotations

from typing import Any

import psycopg

from hermes.store.base import StoreError
from hermes.store.postgres.predicates import CONVERSATIONAL
from hermes.store.search_schema import AFTER_CHARS, BEFORE_CHARS, BODY_CHARS
from hermes.store.vector_sql import conversational


def waiting(table: str = "") -> str:
    """A message the search index does not hold yet; `table` is the alias of `messages`."""
    col = f"{table}." if table else ""
    return f"{col}window_vec IS NULL AND {conversational(table)}"


WAITING = waiting()
"""Migration 17's partial index's condition."""

M017_INDEX_CATCHES_UP = (
    f"CREATE INDEX messages_waiting ON messages (scope, session_id, idx) WHERE {WAITING};"
)

_SET_VECTORS = f"""
    body_vec = to_tsvector('english', left(conv.content, {BODY_CHARS})),
    exact_vec = to_tsvector('simple', left(conv.content, {BODY_CHARS})),
    window_vec =
        setweight(to_tsvector('english', coalesce(right(conv.before, {BEFORE_CHARS}), '')), 'C')
        || setweight(to_tsvector('english', left(conv.content, {BODY_CHARS})), 'A')
        || setweight(to_tsvector('english', coalesce(left(conv.after, {AFTER_CHARS}), '')), 'C')
        || setweight(to_tsvector('simple', coalesce(conv.name, '')), 'B')
"""

VECTORS_SQL = f"""
WITH conv AS (
    SELECT id, content, name,
        lag(content) OVER w AS before, lead(content) OVER w AS after
    FROM messages
    WHERE {{where}} AND {CONVERSATIONAL}
    WINDOW w AS (PARTITION BY scope, session_id ORDER BY idx)
)
UPDATE messages m SET {_SET_VECTORS}
FROM conv WHERE m.id = conv.id {{only}}
"""
"""Every conversational message `where` picks, indexed from scratch (imports, rebuilds)."""

_CATCH_UP_SQL = f"""
WITH firsts AS (
    SELECT scope, session_id, min(idx) AS first FROM messages
    WHERE {WAITING}
        AND (scope, session_id) IN (SELECT * FROM unnest(%(scopes)s::text[], %(ids)s::text[]))
    GROUP BY scope, session_id
), bounds AS (
    SELECT f.scope, f.session_id,
        coalesce(p.idx[1], f.first) AS update_from,
        coalesce(p.idx[2], p.idx[1], f.first) AS lo
    FROM firsts f CROSS JOIN LATERAL (
        SELECT array_agg(two.idx ORDER BY two.idx DESC) AS idx FROM (
            SELECT m.idx FROM messages m
            WHERE m.scope = f.scope AND m.session_id = f.session_id AND m.idx < f.first
                AND {conversational("m")}
            ORDER BY m.idx DESC LIMIT 2
        ) two
    ) p
), conv AS (
    SELECT m.id, m.idx, b.update_from, m.content, m.name,
        lag(m.content) OVER w AS before, lead(m.content) OVER w AS after
    FROM bounds b JOIN messages m
        ON m.scope = b.scope AND m.session_id = b.session_id AND m.idx >= b.lo
    WHERE {conversational("m")}
    WINDOW w AS (PARTITION BY m.scope, m.session_id ORDER BY m.idx)
)
UPDATE messages m SET {_SET_VECTORS}
FROM conv WHERE m.id = conv.id AND conv.idx >= conv.update_from
"""
"""The waiting messages of the given sessions indexed, each session from its first waiting
message, with the conversational message before it re-indexed (its window's `after`
changed; its own window needs the one before it, hence `lo`)."""


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


def catch_up(
    conn: psycopg.Connection[Any],
    *,
    scope: str | None = None,
    sessions: int | None = None,
    wait: bool = True,
) -> int:
    """Index the waiting messages (of `scope`, of at most `sessions` sessions); how many
    sessions were refreshed. With `wait`, a session another transaction is refreshing is
    waited for (the locks taken in one order, so two waiting callers never deadlock);
    without, it is left to that one. The caller holds a transaction."""
    where = WAITING + (" AND scope = %(scope)s" if scope is not None else "")
    take = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    # one statement takes the locks; the next one, with a snapshot taken after them, sees
    # whatever the sessions' previous holders committed
    locked = conn.execute(
        f"SELECT scope, session_id, {take}(hashtextextended("
        f"'hermes-search-index' || chr(31) || scope || chr(31) || session_id, 0)) "
        f"FROM (SELECT DISTINCT scope, session_id FROM messages WHERE {where} "
        f"ORDER BY scope, session_id LIMIT %(most)s) waiting",
        {"scope": scope, "most": sessions},
    ).fetchall()
    mine = [(r[0], r[1]) for r in locked if wait or r[2]]
    if not mine:
        return 0
    conn.execute(
        _CATCH_UP_SQL.encode(),
        {"scopes": [m[0] for m in mine], "ids": [m[1] for m in mine]},
    )
    return len(mine)


def anything_waits(conn: psycopg.Connection[Any], scope: str | None = None) -> bool:
    """Whether any message (of `scope`) waits: one look at the partial index."""
    where = WAITING + (" AND scope = %s" if scope is not None else "")
    sql = f"SELECT EXISTS (SELECT 1 FROM messages WHERE {where})"
    return bool(_scalar(conn, sql, [scope] if scope is not None else []))


def count_waiting(conn: psycopg.Connection[Any], most: int) -> int:
    """How many messages wait, counted up to `most`."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM messages WHERE {WAITING} LIMIT %s) w"
    return int(_scalar(conn, sql, (most,)))
