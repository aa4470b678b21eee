"""PostgreSQL side of the `Searcher` contract: the same four views as SQLite's FTS5.

- `message`: `body_vec`, the message's own text stemmed (english);
- `exact`: `exact_vec`, word forms as written (the `simple` configuration);
- `window`: `window_vec`, the message (weight A) with its previous and next conversational
  messages (weight C) and its speaker's name (weight B), ranked with those weights — the
  same idea as the SQLite view's BM25 column weights;
- `trigram`: pg_trgm over messages in scripts written without spaces (CJK), substring match.

Matches are ranked by BM25 as FTS5 ranks them on SQLite (`_RANKED`): the scope's inverse
document frequencies, each word's (weighted) frequency in the row, the row's length.

The vectors are written after the turn that stored a message, and by every search first
(`search_index`). Every query filters on `scope`, which the GIN indexes hold next to the
vectors (btree_gin).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes.store.base import StoreError
from hermes.store.postgres.predicates import ASKS_BACK, CONVERSATIONAL, ONLY_ASKS, TELLS_WHEN
from hermes.store.postgres.search_index import (
    VECTORS_SQL,
    anything_waits,
    catch_up,
    waiting,
)
from hermes.store.row_scores import idf as _idf
from hermes.store.search_contract import (
    SearchIndexHealth,
    SearchView,
    TermMatching,
    TextMatch,
    query_terms,
    text_key,
)
from hermes.store.search_schema import BODY_CHARS

if TYPE_CHECKING:
    from hermes.store.postgres.pool import Database

SNIPPET_WORDS = 24
# BM25 as SQLite's FTS5 computes it (k1 1.2, b 0.75), over the candidates: each word's
# frequency in the row, weighted by where it occurs (the window view: the message itself 1.0,
# its speaker 0.5, its neighbours 0.3 — SQLite's column weights), saturated against the
# row's length (its distinct words) over the candidates' average length.
K1 = 1.2
B = 0.75
_ZETA2 = 1.6449340668482264  # π²/6


def _tf(vector: str, query: str, weights: str = "{1,1,1,1}") -> str:
    """SQL for how often the one-lexeme `query` occurs in `vector`, read from ts_rank (cheap:
    a binary search in the vector, where unnesting it costs 30x more): for one lexeme, equal
    weights and no normalisation, ts_rank is H(n)/ζ(2) with H(n) = Σ 1/k² over its n
    occurrences, and n = round(1 / (ζ(2) - H(n)) - 1/2) recovers n exactly (0 when absent)."""
    rank = f"ts_rank('{weights}', {vector}, {query}, 0)"
    return f"round(1 / ({_ZETA2} * (1 - {rank})) - 0.5)"


def _window_tf(query: str) -> str:
    """The window view's weighted frequency: in the message itself (its body vector) 1.0,
    in its speaker's name 0.5 (a name is one word: there or not), elsewhere (the
    neighbours) 0.3."""
    body = _tf("c.body", query)
    speaker = f"(ts_rank('{{0,0,1,0}}', c.v, {query}, 0) > 0)::int"
    every = _tf("c.v", query)
    return f"({body} + 0.5 * {speaker} + 0.3 * greatest({every} - {body} - {speaker}, 0))"


RANKED_ROWS = 1000  # matches ranked per query at most (the newest); see _RANKED


_WAITS = f"EXISTS (SELECT 1 FROM messages w WHERE w.scope = %(scope)s AND {waiting('w')})"
"""Whether the scope has messages waiting for the index (migration 17's partial index)."""


class _Waiting:
    """What a search's statements said of its scope's messages waiting for the index: the
    counting statement returns it when it runs, the ranking one on each of its rows."""

    told = False  # some statement said
    waits = False

    def heard(self, waits: Any) -> None:
        self.told = True
        self.waits = self.waits or bool(waits)


# where messages found by other means are and who said them (score 0)
_DESCRIBED = (
    "SELECT m.id, m.session_id, m.idx, m.role, m.timestamp, s.source, 0.0, m.name, "
    f"md5(m.content), {ONLY_ASKS}, {ASKS_BACK} "
)


def _lexeme(term: str) -> str:
    """One term as a quoted tsquery operand (the configuration then normalises it)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_text(terms: Sequence[str], joiner: str = " | ") -> str:
    """Any of the terms (`|`), or every one of them (`&`)."""
    return joiner.join(_lexeme(t) for t in terms)


_VIEW_PLANS: dict[str, tuple[str, str]] = {
    # view: (column, text search configuration)
    "message": ("body_vec", "english"),
    "exact": ("exact_vec", "simple"),
    "window": ("window_vec", "english"),
}


# A word in more of the scope's rows than this does not pick candidates (the SQLite store's
# COMMON_ROWS): ranking every row holding "work" or a speaker's name is the whole cost of a
# query at 1M messages, for a word that barely ranks.
COMMON_ROWS = 3000
COMMON_TTL_S = 300.0  # how long a word found common stays so (counting it costs a GIN scan)
COMMON_KEPT = 10_000
SCOPE_ROWS_TTL_S = 60.0  # how long a scope's size (for the inverse document frequency) holds

# The best `limit` of at most RANKED_ROWS matching rows, the newest ones: BM25 runs on the
# candidates only, and the columns a hit carries (md5, the question test, the session's
# source) only on the rows returned. With fewer matches than RANKED_ROWS (a small scope, a
# query of rare words) the ranking is over every match. For words common in a big scope the
# newest matches are the candidates: found by walking the primary key backwards (the planner
# picks it when the words are frequent, the GIN index when they are rare), they cost what
# RANKED_ROWS costs, not what the scope's size does (at 1M messages ranking every row with
# a common word took 0.3-1 s). A word's frequency in a row is read from the row's vector
# (`unnest`: its lexemes, each with its positions' weights), for the query's lexemes only.
_RANKED = f"""
SELECT m.id, m.session_id, m.idx, m.role, m.timestamp, s.source, top.score, m.name,
    md5(m.content), {ONLY_ASKS}, {ASKS_BACK},
    {_WAITS} AS waits
FROM (
    SELECT c.id, {{score}} AS score
    FROM (
        SELECT c0.*, greatest(avg(c0.dl) OVER (), 1) AS avgdl FROM (
            SELECT m.id, m.{{column}} AS v, m.body_vec AS body, length(m.{{length}}) AS dl
            FROM messages m
            WHERE m.scope = %(scope)s AND {{matching}}
                AND NOT (m.session_id = ANY(%(excluded)s))
            ORDER BY m.id DESC LIMIT %(cap)s
        ) c0
    ) c
    ORDER BY score DESC, c.id LIMIT %(limit)s
) top
JOIN messages m ON m.id = top.id
JOIN sessions s ON s.scope = m.scope AND s.id = m.session_id
ORDER BY top.score DESC, m.id
"""

# one count per word, each its own subquery so that it is planned for that word: a common one
# stops after COMMON_ROWS + 1 rows of the primary key, a rare one reads its GIN entry (a
# GIN bitmap for a word in a third of 1M rows costs ~0.35 s)
_COUNT_ONE = (
    "(SELECT count(*) FROM (SELECT 1 FROM messages m WHERE m.scope = %(scope)s "
    "AND m.{column} @@ to_tsquery('{config}', %({name})s) LIMIT %(cap)s) x)"
)


# the scope's size for the inverse document frequency: its sessions' counts (one row per
# session read, where counting its messages would read every message's index entry)
_SCOPE_ROWS = "(SELECT coalesce(sum(message_count), 0) FROM sessions WHERE scope = %(scope)s)"


def _fetch_planned(db: Database, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run a search statement never prepared: each is planned for its own words (a generic
    plan, picked after a few runs of a prepared one, cannot tell a rare word from a common)."""
    with db.connection() as conn:
        return conn.execute(sql.encode(), params, prepare=False).fetchall()


class PgSearch(TermMatching):
    """PostgreSQL's `Searcher`, served as `PostgresStore.search`: `match_messages`,
    snippets, index check and rebuild."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def catch_up(self, scope: str | None = None) -> int:
        """Index every message of `scope` (of every scope: None) that still waits, so a
        search sees all the messages stored before it; how many sessions were refreshed."""
        with self._db.connection() as conn:
            if not anything_waits(conn, scope):
                return 0
            with conn.transaction():
                return catch_up(conn, scope=scope)

    def _matching(
        self, scope: str, terms: list[str], view: SearchView, limit: int, excluded: list[str]
    ) -> list[TextMatch]:
        """The search, over every message stored before it: the ranking statement says
        whether any of the scope's messages waits for the index (no round trip of its own
        when none does, nearly always); when one does, they are indexed and it runs again."""
        if view == "trigram":
            self.catch_up(scope)
            return self._trigram(scope, terms, limit, excluded)
        seen = _Waiting()
        found = self._match_words(scope, terms, view, limit, excluded, seen)
        if self._caught_up(scope, seen):
            found = self._match_words(scope, terms, view, limit, excluded, _Waiting())
        return found

    def _caught_up(self, scope: str, seen: _Waiting) -> bool:
        """Whether the scope had messages waiting when the search read it: they are then
        indexed (here, or by whoever got there first) and the search must run again. Asked
        in a round trip of its own only when no statement said (every word's count
        remembered, no row found)."""
        if not (seen.waits if seen.told else self._anything_waits(scope)):
            return False
        self.catch_up(scope)
        return True

    def _anything_waits(self, scope: str) -> bool:
        with self._db.connection() as conn:
            return anything_waits(conn, scope)

    def _match_words(
        self,
        scope: str,
        terms: list[str],
        view: SearchView,
        limit: int,
        excluded: list[str],
        seen: _Waiting,
    ) -> list[TextMatch]:
        if view not in _VIEW_PLANS:
            raise StoreError(
                f"unknown search view {view!r}; use one of message, exact, window, trigram"
            )
        column, config = _VIEW_PLANS[view]
        counts, rows = self._counts(scope, column, config, terms, seen)
        # a word in no row adds nothing to any-of and would empty every-word (after a walk
        # of the whole scope looking for it)
        terms = [t for t in terms if counts[t] > 0]
        if not terms:
            return []
        idf = {t: _idf(counts[t], rows) for t in terms}
        rare = [t for t in terms if counts[t] <= COMMON_ROWS]
        if rare and len(rare) < len(terms):  # the rare words pick, as on SQLite
            return self._ranked(view, scope, rare, idf, limit, excluded, seen=seen)
        if not rare and len(terms) > 1:  # all common: rows with every word first
            # each candidate holds every word, so a few more than asked for rank well enough,
            # and the backward walk to find them stays short when the words rarely meet
            found = self._ranked(view, scope, terms, idf, limit, excluded, seen, every=True)
            if len(found) >= limit:
                return found
        return self._ranked(view, scope, terms, idf, limit, excluded, seen=seen)

    def own_words(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, float]:
        """BM25 of the messages' own text (the `message` view) for these messages alone, each
        word's inverse document frequency as `match_messages` has it, a message's length
        that of its window (`window_vec`) over these messages' average (as on SQLite)."""
        words = query_terms(terms)
        ids = list(dict.fromkeys(int(i) for i in message_ids))
        if not words or not ids:
            return {}
        seen = _Waiting()
        found = self._own_words(scope, words, ids, seen)
        if self._caught_up(scope, seen):  # once: what waited is indexed now
            found = self._own_words(scope, words, ids, _Waiting())
        return {m.message_id: m.score for m in found if m.score > 0}

    def _own_words(
        self, scope: str, words: list[str], ids: list[int], seen: _Waiting
    ) -> list[TextMatch]:
        column, config = _VIEW_PLANS["message"]
        counts, rows = self._counts(scope, column, config, words, seen)
        words = [t for t in words if counts[t] > 0]
        if not words:
            return []
        idf = {t: _idf(counts[t], rows) for t in words}
        return self._ranked("message", scope, words, idf, len(ids), [], seen, only=ids)

    def _ranked(
        self,
        view: str,
        scope: str,
        words: list[str],
        idf: dict[str, float],
        limit: int,
        excluded: list[str],
        seen: _Waiting | None = None,
        every: bool = False,
        only: list[int] | None = None,
    ) -> list[TextMatch]:
        """The best `limit` of the newest matches of any (or `every`) one of `words`, ranked
        by BM25 with each word's inverse document frequency in the whole scope; with `only`,
        of those messages alone."""
        column, config = _VIEW_PLANS[view]
        norm = f"{K1} * (1 - {B} + {B} * c.dl / c.avgdl)"
        terms = []
        for n in range(len(words)):
            query = f"to_tsquery('{config}', %(w{n})s)"  # a constant the planner folds
            tf = _window_tf(query) if view == "window" else _tf("c.v", query)
            terms.append(f"%(idf{n})s * {tf} * {K1 + 1} / ({tf} + {norm})")
        # given messages (`only`): each one, matching or not, its length that of its whole
        # window (the turns around it too) over theirs, as SQLite's bm25() of the view has it
        matching = f"m.{column} @@ to_tsquery('{config}', %(q)s)"
        sql = _RANKED.format(
            column=column,
            config=config,
            score=" + ".join(terms),
            length=column if only is None else "window_vec",
            matching=matching if only is None else "m.id = ANY(%(only)s)",
        )
        params: dict[str, Any] = {
            "q": tsquery_text(words, " & " if every else " | "),
            "scope": scope,
            "excluded": excluded,
            "limit": limit,
            "cap": max(2 * limit if every else RANKED_ROWS, limit),
            "only": only,
        }
        params.update({f"w{n}": _lexeme(w) for n, w in enumerate(words)})
        params.update({f"idf{n}": idf[w] for n, w in enumerate(words)})
        rows = _fetch_planned(self._db, sql, params)
        if seen is not None and rows:
            seen.heard(rows[0][-1])
        return [self._match(r) for r in rows]

    def _counts(
        self, scope: str, column: str, config: str, terms: list[str], seen: _Waiting
    ) -> tuple[dict[str, int], int]:
        """(rows of the scope holding each word, up to COMMON_ROWS + 1; the scope's rows).
        A word found common is remembered for COMMON_TTL_S (counting it walks COMMON_ROWS
        rows), others are counted each time (a rare word's GIN entry is short). A statement
        that runs also tells `seen` whether the scope has messages waiting."""
        common: dict[tuple[str, str, str], float] = self.__dict__.setdefault("_common_words", {})
        now = time.monotonic()
        known = {
            t for t in terms if now - common.get((column, scope, t), -COMMON_TTL_S) < COMMON_TTL_S
        }
        fresh = [t for t in terms if t not in known]
        sizes: dict[str, tuple[float, int]] = self.__dict__.setdefault("_scope_rows", {})
        size = sizes.get(scope)
        columns = [] if size and now - size[0] < SCOPE_ROWS_TTL_S else [_SCOPE_ROWS]
        columns += [
            _COUNT_ONE.format(column=column, config=config, name=f"q{n}") for n in range(len(fresh))
        ]
        row: tuple[Any, ...] = ()
        if columns:
            params: dict[str, Any] = {"scope": scope, "cap": COMMON_ROWS + 1}
            params.update({f"q{n}": _lexeme(t) for n, t in enumerate(fresh)})
            sql = "SELECT " + ", ".join([*columns, _WAITS])
            row = _fetch_planned(self._db, sql, params)[0]
            seen.heard(row[-1])
            row = row[:-1]
        if columns and columns[0] is _SCOPE_ROWS:
            if len(sizes) >= COMMON_KEPT:
                sizes.clear()
            size = sizes[scope] = (now, int(row[0]))
            row = row[1:]
        counts = {t: COMMON_ROWS + 1 for t in known}
        counts.update({t: int(c) for t, c in zip(fresh, row, strict=True)})
        for term in fresh:
            if counts[term] > COMMON_ROWS:
                if len(common) >= COMMON_KEPT:
                    common.clear()
                common[(column, scope, term)] = now
        return counts, size[1] if size else 0

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
            f"m.name, md5(m.content), {ONLY_ASKS}, {ASKS_BACK} "
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
            asks_back=bool(r[10]),
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

    def tells_when(self, scope: str, message_ids: Sequence[int]) -> set[int]:
        """Those of the messages whose text places something in time (a regex in SQL,
        `search_contract.tells_when`'s)."""
        ids = list(dict.fromkeys(int(i) for i in message_ids))
        if not ids:
            return set()
        rows = self._db.fetch(
            f"SELECT m.id FROM messages m WHERE m.scope = %s AND m.id = ANY(%s) AND {TELLS_WHEN}",
            (scope, ids),
        )
        return {int(r[0]) for r in rows}

    def check_search_index(self) -> SearchIndexHealth:
        """Every conversational message must carry its three vectors (once the waiting
        ones are indexed)."""
        try:
            self.catch_up()
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
        sql = VECTORS_SQL.format(where="true", only="")
        with self._db.transaction() as conn:
            conn.execute(
                f"UPDATE messages SET body_vec = NULL, exact_vec = NULL, window_vec = NULL "
                f"WHERE NOT ({CONVERSATIONAL}) AND window_vec IS NOT NULL"
            )
            return conn.execute(sql.encode()).rowcount
