"""SQLite side of the `Searcher` contract: the search views queried with FTS5.

Views (schema in search_schema.py): `window` and `message` share `message_windows_fts` (the
message with its neighbouring turns; `message` matches and scores only the message's own
column), `exact` is `message_exact_fts` (no stemming), `trigram` is `message_trigram_fts`
(only messages in scripts without spaces). Each query is confined to a scope by a join on
`messages.scope` and, in the tagged tables, by the scope's token inside the index itself.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from hermes.store.base import NewSession, SearchIndexHealth, SearchView, StoreError, TextMatch
from hermes.store.search_schema import (
    AFTER_CHARS,
    BEFORE_CHARS,
    BODY_CHARS,
    SEARCH_TABLES,
    scope_tag,
)

MAX_CANDIDATES = 5000
# the characters the trigram view's GLOB selects (search_schema._UNSEGMENTED), for Python
UNSEGMENTED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
SNIPPET_TOKENS = 24


@dataclass(frozen=True, slots=True)
class WindowWeights:
    """BM25 column weights: how much the neighbours count next to the message itself."""

    before: float = 0.3
    body: float = 1.0
    after: float = 0.3
    speaker: float = 0.5


WINDOW_WEIGHTS = WindowWeights()


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _any(terms: Sequence[str]) -> str:
    return "(" + " OR ".join(_quote(t) for t in terms) + ")"


def _plan(view: SearchView, scope: str, terms: Sequence[str]) -> tuple[str, str, str]:
    """(FTS table, rank expression, MATCH expression) for one view."""
    tag = _quote(scope_tag(scope))
    if view == "window":
        w = WINDOW_WEIGHTS
        rank = f"bm25(message_windows_fts, {w.before}, {w.body}, {w.after}, {w.speaker}, 0.0)"
        cols = "{before body after speaker}"
        return "message_windows_fts", rank, f"tag : {tag} AND {cols} : {_any(terms)}"
    if view == "message":
        rank = "bm25(message_windows_fts, 0.0, 1.0, 0.0, 0.0, 0.0)"
        return "message_windows_fts", rank, f"tag : {tag} AND body : {_any(terms)}"
    if view == "exact":
        rank = "bm25(message_exact_fts, 1.0, 0.0)"
        return "message_exact_fts", rank, f"tag : {tag} AND content : {_any(terms)}"
    if view == "trigram":
        usable = [t for t in terms if len(t) >= 3]
        if not usable:
            return "message_trigram_fts", "", ""
        # trigram cannot index the scope's token; its rows are few, so filter the column
        match = f"content : {_any(usable)}"
        return "message_trigram_fts", "bm25(message_trigram_fts)", match
    raise StoreError(f"unknown search view {view!r}; use one of message, exact, window, trigram")


class SearchIndexMixin:
    """Mixed into SQLiteStore: `match_messages`, snippets, index check and rebuild."""

    _conn: sqlite3.Connection
    _lock: threading.RLock

    def match_messages(
        self,
        scope: str,
        terms: Sequence[str],
        *,
        view: SearchView = "window",
        limit: int = 50,
        exclude_sessions: Sequence[str] = (),
    ) -> list[TextMatch]:
        """Best-first messages of `scope` matching any term in `view` (see the contract)."""
        terms = [t for t in dict.fromkeys(t.lower() for t in terms) if t]
        if not terms or limit <= 0:
            return []
        table, rank, match = _plan(view, scope, terms)
        if not match:
            return []
        excluded = set(exclude_sessions)
        size = limit + 20 if excluded else limit
        while True:
            found = self._candidates(table, rank, match, scope, size)
            kept = [m for m in found if m.session_id not in excluded]
            # an excluded (live) session may fill the candidates: look deeper, boundedly
            if len(kept) >= limit or len(found) < size or size >= MAX_CANDIDATES:
                return kept[:limit]
            size *= 4

    def _candidates(
        self, table: str, rank: str, match: str, scope: str, size: int
    ) -> list[TextMatch]:
        tagged = " AND tag = ?" if table == "message_trigram_fts" else ""
        params: tuple[object, ...] = (match, scope_tag(scope)) if tagged else (match,)
        sql = (
            f"SELECT f.id, f.score, m.session_id, m.idx, m.role, m.timestamp, s.source "
            f"FROM (SELECT rowid AS id, {rank} AS score FROM {table} "
            f"WHERE {table} MATCH ?{tagged} ORDER BY score LIMIT ?) f "
            f"JOIN messages m ON m.id = f.id "
            f"JOIN sessions s ON s.scope = m.scope AND s.id = m.session_id "
            f"WHERE m.scope = ? ORDER BY f.score, f.id"
        )
        try:
            with self._lock:
                rows = self._conn.execute(sql, (*params, size, scope)).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"search failed: {exc}; `hermes sessions reindex` rebuilds") from None
        return [
            TextMatch(
                message_id=int(r[0]),
                session_id=r[2],
                index=int(r[3]),
                role=r[4],
                timestamp=float(r[5]),
                score=-float(r[1]),
                source=r[6],
            )
            for r in rows
        ]

    def message_snippets(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, str]:
        """FTS5 highlighted excerpts of the messages' own text; plain text where none match."""
        ids = list(dict.fromkeys(message_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        out: dict[int, str] = {}
        words = [t for t in dict.fromkeys(t.lower() for t in terms) if t]
        with self._lock:
            if words:
                _, _, match = _plan("message", scope, words)
                rows = self._conn.execute(
                    f"SELECT rowid, snippet(message_windows_fts, 1, '[', ']', '…', "
                    f"{SNIPPET_TOKENS}) FROM message_windows_fts "
                    f"WHERE message_windows_fts MATCH ? AND rowid IN ({marks})",
                    (match, *ids),
                ).fetchall()
                out.update({int(r[0]): r[1] for r in rows})
            rest = [i for i in ids if i not in out]
            if rest:
                rows = self._conn.execute(
                    f"SELECT id, substr(content, 1, 200) FROM messages "
                    f"WHERE scope = ? AND id IN ({','.join('?' * len(rest))})",
                    (scope, *rest),
                ).fetchall()
                out.update({int(r[0]): r[1] or "" for r in rows})
        return out

    def _index_new(
        self, conn: sqlite3.Connection, scope: str, first_id: int, sessions: Sequence[NewSession]
    ) -> None:
        """Index freshly inserted sessions whose messages got ids first_id, first_id + 1, …

        The rows are computed here exactly as the views compute them (same neighbours, same
        clipping), which FTS5's integrity check verifies, but without the views' per-row
        neighbour lookups: a bulk load tokenises each message once per index.
        """
        tag = scope_tag(scope)
        windows: list[tuple[object, ...]] = []
        exact: list[tuple[object, ...]] = []
        trigram: list[tuple[object, ...]] = []
        next_id = first_id
        for session in sessions:
            conv: list[tuple[int, str, str]] = []
            for m in session.messages:
                if m.role in ("user", "assistant") and m.content:
                    conv.append((next_id, m.content, m.name or ""))
                next_id += 1
            for i, (mid, text, speaker) in enumerate(conv):
                before = conv[i - 1][1][-BEFORE_CHARS:] if i else ""
                after = conv[i + 1][1][:AFTER_CHARS] if i + 1 < len(conv) else ""
                body = text[:BODY_CHARS]
                windows.append((mid, before, body, after, speaker, tag))
                exact.append((mid, body, tag))
                if UNSEGMENTED.search(text):
                    trigram.append((mid, body, tag))
        conn.executemany(
            "INSERT INTO message_windows_fts (rowid, before, body, after, speaker, tag) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            windows,
        )
        for table, rows in (("message_exact_fts", exact), ("message_trigram_fts", trigram)):
            conn.executemany(f"INSERT INTO {table} (rowid, content, tag) VALUES (?, ?, ?)", rows)

    def check_search_index(self) -> SearchIndexHealth:
        """FTS5's own integrity check of every search table against the messages."""
        try:
            with self._lock:
                for table in SEARCH_TABLES:
                    self._conn.execute(
                        f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)"
                    )
                rows = self._conn.execute("SELECT COUNT(*) FROM message_exact").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            return SearchIndexHealth(
                ok=False,
                detail=f"the search index does not match the messages ({exc}); "
                "run `hermes sessions reindex` to rebuild it",
            )
        return SearchIndexHealth(ok=True, detail="ok", rows=int(rows))

    def rebuild_search_index(self) -> int:
        """Rebuild every search table from the messages in one transaction."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for table in SEARCH_TABLES:
                    self._conn.execute(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")
                rows = self._conn.execute("SELECT COUNT(*) FROM message_exact").fetchone()[0]
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return int(rows)
