"""The neighbouring-turn search index (migration 3) and the SQL that queries it.

Why a second FTS index: evidence in a conversation is often spread over a user turn and the
reply next to it ("we adopted a puppy" / "Biscuit is a lovely name for a dog"), and a single
message rarely holds every word of a later question. Each conversational message (user or
assistant, non-empty) gets one row whose columns are its previous conversational message
(`before`), itself (`body`) and its next one (`after`), so BM25 with column weights scores a
message together with its context. The rows are an external-content FTS5 table over a view
computed from `messages`: nothing is stored twice. Triggers keep it in sync; they remove a
row with the exact text it was indexed with, which the view still yields *before* the change.
A `tag` column holds a token derived from the scope so a query never leaves its scope, even
inside the index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

BEFORE_CHARS = 1000
AFTER_CHARS = 1000
BODY_CHARS = 20000

_CONV = "{t}.role IN ('user', 'assistant') AND coalesce({t}.content, '') <> ''"


def _neighbour(alias: str, row: str, direction: str) -> str:
    """SQL for the id of the nearest conversational message before/after `row` in its session."""
    op, order = ("<", "DESC") if direction == "prev" else (">", "ASC")
    return (
        f"(SELECT {alias}.id FROM messages {alias} WHERE {alias}.scope = {row}.scope "
        f"AND {alias}.session_id = {row}.session_id AND {alias}.idx {op} {row}.idx "
        f"AND {_CONV.format(t=alias)} ORDER BY {alias}.idx {order} LIMIT 1)"
    )


def _window_ids(row: str, *, include_self: bool) -> str:
    ids = [_neighbour("p", row, "prev"), _neighbour("n", row, "next")]
    if include_self:
        ids.insert(1, f"{row}.id")
    return ", ".join(ids)


_COLS = "before, body, after, tag"


def _delete(where: str) -> str:
    return (
        f"INSERT INTO message_windows_fts (message_windows_fts, rowid, {_COLS}) "
        f"SELECT 'delete', w.id, w.before, w.body, w.after, w.tag FROM message_windows w "
        f"WHERE {where};"
    )


def _insert(where: str) -> str:
    return (
        f"INSERT INTO message_windows_fts (rowid, {_COLS}) "
        f"SELECT w.id, w.before, w.body, w.after, w.tag FROM message_windows w WHERE {where};"
    )


_SESSION_EXISTS = (
    "EXISTS (SELECT 1 FROM sessions s WHERE s.scope = {r}.scope AND s.id = {r}.session_id)"
)

M003_MESSAGE_WINDOWS = f"""
CREATE VIEW message_windows (id, scope, session_id, before, body, after, tag) AS
SELECT m.id, m.scope, m.session_id,
    coalesce((SELECT substr(p.content, -{BEFORE_CHARS}) FROM messages p
              WHERE p.scope = m.scope AND p.session_id = m.session_id AND p.idx < m.idx
                AND {_CONV.format(t="p")} ORDER BY p.idx DESC LIMIT 1), ''),
    substr(m.content, 1, {BODY_CHARS}),
    coalesce((SELECT substr(n.content, 1, {AFTER_CHARS}) FROM messages n
              WHERE n.scope = m.scope AND n.session_id = m.session_id AND n.idx > m.idx
                AND {_CONV.format(t="n")} ORDER BY n.idx ASC LIMIT 1), ''),
    's' || lower(hex(m.scope))
FROM messages m
WHERE {_CONV.format(t="m")};
CREATE VIRTUAL TABLE message_windows_fts USING fts5(
    before, body, after, tag, content='message_windows', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER message_windows_bi BEFORE INSERT ON messages
WHEN {_CONV.format(t="new")} BEGIN
    {_delete("w.id IN (" + _window_ids("new", include_self=False) + ")")}
END;
CREATE TRIGGER message_windows_ai AFTER INSERT ON messages
WHEN {_CONV.format(t="new")} BEGIN
    {_insert("w.id IN (" + _window_ids("new", include_self=True) + ")")}
END;
CREATE TRIGGER message_windows_bd BEFORE DELETE ON messages
WHEN {_CONV.format(t="old")} AND {_SESSION_EXISTS.format(r="old")} BEGIN
    {_delete("w.id IN (" + _window_ids("old", include_self=True) + ")")}
END;
CREATE TRIGGER message_windows_ad AFTER DELETE ON messages
WHEN {_CONV.format(t="old")} AND {_SESSION_EXISTS.format(r="old")} BEGIN
    {_insert("w.id IN (" + _window_ids("old", include_self=False) + ")")}
END;
CREATE TRIGGER message_windows_bu BEFORE UPDATE OF content ON messages
WHEN old.role IN ('user', 'assistant') AND old.content IS NOT new.content BEGIN
    {_delete("w.id IN (" + _window_ids("old", include_self=True) + ")")}
END;
CREATE TRIGGER message_windows_au AFTER UPDATE OF content ON messages
WHEN new.role IN ('user', 'assistant') AND old.content IS NOT new.content BEGIN
    {_insert("w.id IN (" + _window_ids("new", include_self=True) + ")")}
END;
CREATE TRIGGER message_windows_session_bd BEFORE DELETE ON sessions BEGIN
    {_delete("w.scope = old.scope AND w.session_id = old.id")}
END;
INSERT INTO message_windows_fts (message_windows_fts) VALUES ('rebuild');
"""
# Deleting a session cascades to its messages after the session row is gone: the session
# trigger above drops all its windows at once, and the per-message triggers stand aside
# (their WHEN clause sees no session), so a cascade never re-indexes rows about to vanish.


def scope_tag(scope: str) -> str:
    """The token the `tag` column holds for a scope (same formula as the view's SQL)."""
    return "s" + scope.encode("utf-8").hex()


@dataclass(frozen=True, slots=True)
class WindowWeights:
    """BM25 column weights: how much the neighbours count next to the message itself."""

    before: float = 0.3
    body: float = 1.0
    after: float = 0.3


@dataclass(frozen=True, slots=True)
class Candidate:
    message_id: int
    window_score: float
    body_score: float


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def window_match(scope: str, terms: Sequence[str]) -> str:
    """An FTS5 query: any of the terms in a message or its neighbours, inside one scope."""
    alternatives = " OR ".join(_quote(t) for t in terms)
    return f"tag : {_quote(scope_tag(scope))} AND {{before body after}} : ({alternatives})"


def window_candidates(
    conn: sqlite3.Connection,
    scope: str,
    terms: Sequence[str],
    *,
    limit: int,
    weights: WindowWeights = WindowWeights(),
) -> list[Candidate]:
    """The best `limit` messages by windowed BM25 (higher is better), with body-only BM25."""
    if not terms:
        return []
    rows = conn.execute(
        "SELECT rowid, bm25(message_windows_fts, ?, ?, ?, 0.0) AS s, "
        "bm25(message_windows_fts, 0.0, 1.0, 0.0, 0.0) "
        "FROM message_windows_fts WHERE message_windows_fts MATCH ? ORDER BY s LIMIT ?",
        (weights.before, weights.body, weights.after, window_match(scope, terms), limit),
    ).fetchall()
    return [Candidate(int(r[0]), -float(r[1]), -float(r[2])) for r in rows]


def body_snippet(
    conn: sqlite3.Connection, scope: str, terms: Sequence[str], message_id: int, *, tokens: int = 24
) -> str | None:
    """FTS5's highlighted snippet of one message's own text ([term] marks the matches)."""
    row = conn.execute(
        "SELECT snippet(message_windows_fts, 1, '[', ']', '…', ?) FROM message_windows_fts "
        "WHERE message_windows_fts MATCH ? AND rowid = ?",
        (tokens, window_match(scope, terms), message_id),
    ).fetchone()
    return row[0] if row else None
