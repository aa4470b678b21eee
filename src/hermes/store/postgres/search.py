"""PostgreSQL side of the `Searcher` contract: the same four views as SQLite's FTS5.

- `message`: `body_vec`, the message's own text stemmed (english);
- `exact`: `exact_vec`, word forms as written (the `simple` configuration);
- `window`: `window_vec`, the message (weight A) with its previous and next conversational
  messages (weight C) and its speaker's name (weight B), ranked with those weights — the
  same idea as the SQLite view's BM25 column weights;
- `trigram`: pg_trgm over messages in scripts written without spaces (CJK), substring match.

The vectors are written by the transaction that appends a message (`refresh_vectors`), which
also re-indexes the previous conversational message, whose window gained a neighbour. Every
query filters on `scope`, which the GIN indexes hold next to the vectors (btree_gin).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg

from hermes.recall.contract import SearchIndexHealth, SearchView, TextMatch, text_key
from hermes.store.base import StoreError
from hermes.store.postgres.schema import CONVERSATIONAL

if TYPE_CHECKING:
    from hermes.store.postgres.pool import Database

BEFORE_CHARS = 1000
AFTER_CHARS = 1000
BODY_CHARS = 20000
SNIPPET_WORDS = 24
WINDOW_WEIGHTS = "{0.0, 0.3, 0.5, 1.0}"  # ts_rank weights D, C, B, A: -, neighbours, speaker, body
MAX_CANDIDATES = 5000
# store.base.only_asks in SQL: a question and nothing else (ends with "?", no "." or "!")
ONLY_ASKS = "(m.content ~ '[?？][[:space:]]*$' AND m.content !~ '[.!。！]')"
# where messages found by other means are and who said them (score 0)
_DESCRIBED = (
    "SELECT m.id, m.session_id, m.idx, m.role, m.timestamp, s.source, 0.0, m.name, "
    f"md5(m.content), {ONLY_ASKS} "
)

_VECTORS = f"""
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
    """Index the messages appended at positions ≥ `first`, and re-index the conversational
    message before them (its window's `after` changed); runs in the append's transaction."""
    prev = conn.execute(
        f"SELECT idx FROM messages WHERE scope = %s AND session_id = %s AND idx < %s "
        f"AND {CONVERSATIONAL} ORDER BY idx DESC LIMIT 2",
        (scope, session_id, first),
    ).fetchall()
    lo = int(prev[-1][0]) if prev else first  # the window of prev[0] needs prev[1]
    update_from = int(prev[0][0]) if prev else first
    sql = _VECTORS.format(
        where="scope = %s AND session_id = %s AND idx >= %s", only="AND m.idx >= %s"
    )
    conn.execute(sql.encode(), (scope, session_id, lo, update_from))


def index_sessions(conn: psycopg.Connection[Any], scope: str, session_ids: list[str]) -> None:
    """Index every message of whole sessions in one statement (bulk imports)."""
    sql = _VECTORS.format(where="scope = %s AND session_id = ANY(%s)", only="")
    conn.execute(sql.encode(), (scope, session_ids))


def _lexeme(term: str) -> str:
    """One term as a quoted tsquery operand (the configuration then normalises it)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_text(terms: Sequence[str]) -> str:
    return " | ".join(_lexeme(t) for t in terms)


_VIEW_PLANS: dict[str, tuple[str, str, str]] = {
    # view: (column, text search configuration, rank expression over `v` and `q`)
    "message": ("body_vec", "english", "ts_rank(m.body_vec, q, 1)"),
    "exact": ("exact_vec", "simple", "ts_rank(m.exact_vec, q, 1)"),
    "window": ("window_vec", "english", f"ts_rank('{WINDOW_WEIGHTS}', m.window_vec, q, 1)"),
}


class PgSearch:
    """PostgreSQL's `Searcher`, served as `PostgresStore.search`: `match_messages`,
    snippets, index check and rebuild."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def match_messages(
        self,
        scope: str,
        terms: Sequence[str],
        *,
        view: SearchView = "window",
        limit: int = 50,
        exclude_sessions: Sequence[str] = (),
    ) -> list[TextMatch]:
        terms = [t for t in dict.fromkeys(t.lower() for t in terms) if t]
        if not terms or limit <= 0:
            return []
        excluded = list(dict.fromkeys(exclude_sessions))
        if view == "trigram":
            return self._trigram(scope, terms, limit, excluded)
        if view not in _VIEW_PLANS:
            raise StoreError(
                f"unknown search view {view!r}; use one of message, exact, window, trigram"
            )
        column, config, rank = _VIEW_PLANS[view]
        sql = (
            f"SELECT m.id, m.session_id, m.idx, m.role, m.timestamp, s.source, r.score, m.name, "
            f"md5(m.content), {ONLY_ASKS} FROM messages m, to_tsquery('{config}', %(q)s) q, "
            f"LATERAL (SELECT {rank} AS score) r, "
            f"sessions s "
            f"WHERE m.scope = %(scope)s AND m.{column} @@ q "
            f"AND NOT (m.session_id = ANY(%(excluded)s)) "
            f"AND s.scope = m.scope AND s.id = m.session_id "
            f"ORDER BY r.score DESC, m.id LIMIT %(limit)s"
        )
        params = {"q": tsquery_text(terms), "scope": scope, "excluded": excluded, "limit": limit}
        return [self._match(r) for r in self._db.fetch(sql, params)]

    def _trigram(
        self, scope: str, terms: list[str], limit: int, excluded: list[str]
    ) -> list[TextMatch]:
        usable = [t for t in terms if len(t) >= 3]
        if not usable:
            return []
        patterns = [
            "%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            for t in usable
        ]
        hits = " + ".join(["(m.content ILIKE %s)::int"] * len(patterns))
        sql = (
            f"SELECT m.id, m.session_id, m.idx, m.role, m.timestamp, s.source, ({hits}) AS score, "
            f"m.name, md5(m.content), {ONLY_ASKS} "
            f"FROM messages m JOIN sessions s ON s.scope = m.scope AND s.id = m.session_id "
            f"WHERE m.unsegmented AND m.scope = %s AND m.content ILIKE ANY(%s) "
            f"AND NOT (m.session_id = ANY(%s)) ORDER BY score DESC, m.id LIMIT %s"
        )
        rows = self._db.fetch(sql, (*patterns, scope, patterns, excluded, limit))
        return [self._match(r) for r in rows]

    def messages_at(self, scope: str, places: Sequence[tuple[str, int]]) -> list[TextMatch]:
        """The conversational messages at (session id, index) places of `scope`."""
        wanted = list(dict.fromkeys((str(s), int(i)) for s, i in places))
        if not wanted:
            return []
        # the few places drive the join: one index lookup each, never a scan of the scope
        rows = self._db.fetch(
            _DESCRIBED + "FROM unnest(%s::text[], %s::int[]) AS p(session_id, idx) "
            "JOIN messages m ON m.scope = %s AND m.session_id = p.session_id AND m.idx = p.idx "
            "JOIN sessions s ON s.scope = m.scope AND s.id = m.session_id "
            "WHERE m.role IN ('user', 'assistant') AND coalesce(m.content, '') <> '' "
            "ORDER BY m.id",
            ([p[0] for p in wanted], [p[1] for p in wanted], scope),
        )
        return [self._match(r) for r in rows]

    @staticmethod
    def _match(r: tuple[Any, ...]) -> TextMatch:
        return TextMatch(
            message_id=int(r[0]),
            session_id=r[1],
            index=int(r[2]),
            role=r[3],
            timestamp=float(r[4]),
            score=float(r[6]),
            source=r[5],
            speaker=r[7],
            text_key=text_key(r[8], r[7]),
            asks=bool(r[9]),
        )

    def message_snippets(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, str]:
        """ts_headline excerpts of the messages' own text, matches marked `[like this]`;
        the first 200 characters where the words do not match (e.g. CJK substrings)."""
        ids = list(dict.fromkeys(int(i) for i in message_ids))
        if not ids:
            return {}
        words = [t for t in dict.fromkeys(t.lower() for t in terms) if t]
        options = f"StartSel=[, StopSel=], MaxWords={SNIPPET_WORDS}, MinWords=8, ShortWord=2, MaxFragments=1, FragmentDelimiter=…"
        sql = (
            "SELECT m.id, CASE WHEN m.body_vec @@ q THEN "
            f"ts_headline('english', left(m.content, {BODY_CHARS}), q, %s) "
            "ELSE left(coalesce(m.content, ''), 200) END "
            "FROM messages m, to_tsquery('english', %s) q WHERE m.scope = %s AND m.id = ANY(%s)"
        )
        rows = self._db.fetch(sql, (options, tsquery_text(words) if words else "", scope, ids))
        return {int(r[0]): r[1] or "" for r in rows}

    def check_search_index(self) -> SearchIndexHealth:
        """Every conversational message must carry its three vectors."""
        try:
            rows = self._db.fetch(
                f"SELECT count(*), count(*) FILTER (WHERE body_vec IS NULL OR exact_vec IS NULL "
                f"OR window_vec IS NULL) FROM messages WHERE {CONVERSATIONAL}"
            )
        except StoreError as exc:
            return SearchIndexHealth(ok=False, detail=str(exc))
        total, missing = int(rows[0][0]), int(rows[0][1])
        if missing:
            return SearchIndexHealth(
                ok=False,
                detail=f"{missing} of {total} messages are not in the search index; "
                "run `hermes sessions reindex` to rebuild it",
                rows=total - missing,
            )
        return SearchIndexHealth(ok=True, detail="ok", rows=total)

    def rebuild_search_index(self) -> int:
        sql = _VECTORS.format(where="true", only="")
        with self._db.transaction() as conn:
            conn.execute(
                f"UPDATE messages SET body_vec = NULL, exact_vec = NULL, window_vec = NULL "
                f"WHERE NOT ({CONVERSATIONAL}) AND window_vec IS NOT NULL"
            )
            return conn.execute(sql.encode()).rowcount
