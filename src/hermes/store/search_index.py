"""SQLite side of the `Searcher` contract (`store.search`): the search views queried with FTS5.

Views (schema in search_schema.py): `window` and `message` share `message_windows_fts` (the
message with its neighbouring turns; `message` matches and scores only the message's own
column), `exact` is `message_exact_fts` (no stemming), `trigram` is `message_trigram_fts`
(only messages in scripts without spaces). Each query is confined to a scope by a join on
`messages.scope` and, in the tagged tables, by the scope's token inside the index itself.
"""

from __future__ import annotations

import functools
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes.store.base import NewSession, StoreError
from hermes.store.row_scores import Weights, bm25_rows, idf
from hermes.store.search_catchup import catch_up, hold_all, waiting
from hermes.store.search_contract import (
    SearchIndexHealth,
    SearchView,
    TermMatching,
    TextMatch,
    asks_back,
    only_asks,
    query_terms,
    text_key,
)
from hermes.store.search_contract import tells_when as says_when
from hermes.store.search_schema import (
    AFTER_CHARS,
    BEFORE_CHARS,
    BODY_CHARS,
    SEARCH_TABLES,
    scope_tag,
)
from hermes.unsegmented import unsegmented

log = logging.getLogger(__name__)

MAX_CANDIDATES = 5000
UNRANKED_ROWS = 1000  # rows holding every (common) word, up to this many, are ranked here
COMMON_ROWS = 3000  # a word in more rows of the scope than this does not pick candidates
DOMINANT_SHARE = 0.5  # a scope with this share of all messages is searched without its tag
SHARE_TTL_S = 60.0
COMMON_TTL_S = 300.0  # how long a word found in more than COMMON_ROWS rows counts as common
COMMON_KEPT = 10_000  # common words remembered per store, at most
SNIPPET_TOKENS = 24
# bytes of new index entries FTS5 gathers in memory before it writes them as a segment (its
# default is 1 MB): a bulk load writes fewer, bigger segments and merges them less (the
# windows' indexing of 100k messages took a quarter less CPU at 16 MB; bench/recall.py)
BULK_HASHSIZE = 16_000_000


@dataclass(frozen=True, slots=True)
class WindowWeights:
    """BM25 column weights: how much the neighbours count next to the message itself."""

    before: float = 0.3
    body: float = 1.0
    after: float = 0.3
    speaker: float = 0.5


WINDOW_WEIGHTS = WindowWeights()
ROW_WEIGHTS = Weights(
    body=WINDOW_WEIGHTS.body,
    speaker=WINDOW_WEIGHTS.speaker,
    elsewhere=max(WINDOW_WEIGHTS.before, WINDOW_WEIGHTS.after),
)
# the tokenizer of the `message` and `window` views (search_schema: message_windows_fts)
WORDS_TOKENIZER = "porter unicode61 remove_diacritics 2"


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _any_of(terms: Sequence[str], joiner: str = " OR ") -> str:
    return "(" + joiner.join(_quote(t) for t in terms) + ")"


def _untagged(match: str) -> str:
    """The MATCH expression without its leading `tag : "…" AND ` (see `_tag_helps`)."""
    head, sep, rest = match.partition(" AND ")
    return rest if sep and head.startswith("tag : ") else match


def _plan(
    view: SearchView, scope: str, terms: Sequence[str], *, every: bool = False
) -> tuple[str, str, str]:
    """(FTS table, rank expression, MATCH expression) for one view: rows with any of the
    terms, or with `every` one of them."""
    tag = _quote(scope_tag(scope))
    _any = functools.partial(_any_of, joiner=" AND " if every else " OR ")
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


_TOKEN = re.compile(r"\w+", re.UNICODE)


def _matches(word: str, terms: Sequence[str]) -> bool:
    """A word of the text matches a query word: same word, or a form of it (a crude stem:
    the query word less its last letter as a prefix, for words of four letters or more)."""
    w = word.lower()
    return any(w == t or (len(t) >= 4 and w.startswith(t[:-1])) for t in terms)


def highlight(text: str, terms: Sequence[str], *, tokens: int = SNIPPET_TOKENS) -> str:
    """About `tokens` words of `text` around its first matching word, matches in [brackets]."""
    spans = list(_TOKEN.finditer(text))
    if not spans:
        return text[:200]
    # `_matches`, with the terms looked at once per snippet rather than once per word
    same, forms = frozenset(terms), tuple(t[:-1] for t in terms if len(t) >= 4)
    found = [
        at for at, m in enumerate(spans) if (w := m.group().lower()) in same or w.startswith(forms)
    ]
    first = found[0] if found else 0
    lo = max(0, first - tokens // 3)
    hi = min(len(spans), lo + tokens)
    start, end = spans[lo].start(), spans[hi - 1].end()
    out, pos = [], start
    for m in (spans[at] for at in found if lo <= at < hi):
        out += [text[pos : m.start()], "[", m.group(), "]"]
        pos = m.end()
    out.append(text[pos:end])
    return ("…" if lo else "") + "".join(out) + ("…" if hi < len(spans) else "")


_TEXT_ROWS = (
    "SELECT m.id, m.session_id, m.idx, m.role, m.timestamp, m.name, m.content FROM messages m"
)


def _by_ids(select: str, scope: str, ids: Sequence[int]) -> tuple[str, tuple[object, ...]]:
    """`select` (of `messages m`) confined to `ids` of `scope`: (SQL, parameters)."""
    marks = ",".join("?" * len(ids))
    return f"{select} WHERE +m.scope = ? AND m.id IN ({marks})", (scope, *ids)


def _text_match(row: Sequence[Any], score: float) -> TextMatch:
    """A `_meta_rows` row as a match."""
    return TextMatch(
        message_id=int(row[0]),
        session_id=row[1],
        index=int(row[2]),
        role=row[3],
        timestamp=float(row[4]),
        score=score,
        source=row[5],
        speaker=row[6],
        text_key=text_key(row[7], row[6]),
        asks=only_asks(row[7]),
        asks_back=asks_back(row[7]),
    )


def index_new_sessions(
    conn: sqlite3.Connection, scope: str, first_id: int, sessions: Sequence[NewSession]
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
            if unsegmented(text):
                trigram.append((mid, body, tag))
    for table in ("message_windows_fts", "message_exact_fts"):  # (kept in their config)
        conn.execute(
            f"INSERT INTO {table} ({table}, rank) VALUES ('hashsize', ?)", (BULK_HASHSIZE,)
        )
    conn.executemany(
        "INSERT INTO message_windows_fts (rowid, before, body, after, speaker, tag) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        windows,
    )
    for table, rows in (("message_exact_fts", exact), ("message_trigram_fts", trigram)):
        conn.executemany(f"INSERT INTO {table} (rowid, content, tag) VALUES (?, ?, ?)", rows)


class SQLiteSearch(TermMatching):
    """SQLite's `Searcher`, served as `SQLiteStore.search`: `match_messages`, snippets, index
    check and rebuild, on the store's connection under the store's lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def catch_up(self) -> int:
        """Index every message still waiting (`search_catchup`), so a search sees all the
        messages stored before it; how many ids the mark moved (0: nothing waited).

        A database that cannot be written now (another process holding its write lock
        past the busy timeout, a read-only file) is searched as far as it is indexed: a
        search never fails for want of indexing."""
        with self._lock:
            upto, last = waiting(self._conn)
            if last <= upto:
                return 0
            if self._conn.in_transaction:  # a store call of this thread: part of its write
                return catch_up(self._conn)
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    moved = catch_up(self._conn)
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                log.warning(
                    "searching without the %d newest messages: the index cannot catch up (%s)",
                    last - upto,
                    exc,
                )
                return 0
            return moved

    def _matching(
        self,
        scope: str,
        terms: list[str],
        view: SearchView,
        limit: int,
        exclude_sessions: list[str],
    ) -> list[TextMatch]:
        self.catch_up()  # every message stored before the search, indexed
        table, rank, match = _plan(view, scope, terms)
        if not match:
            return []
        # a word in very many of the scope's rows makes BM25 score all of them: at 1M
        # messages that is the whole cost of a query, for a word that barely ranks
        tagged = table == "message_trigram_fts" or self._tag_helps(scope)
        plans = [match]
        if view != "trigram":
            counts = self._counts(view, scope, terms, tagged)
            # a word in no row matches nothing: kept, it would count as the rarest and pick
            # the candidates alone (none), and empty the rows holding every word
            terms = [t for t in terms if counts[t]]
            if not terms:
                return []
            plans = [_plan(view, scope, terms)[2]]
            rare = [t for t in terms if counts[t] <= COMMON_ROWS]
            if rare and len(rare) < len(terms):
                plans = [_plan(view, scope, rare)[2]]
            elif not rare and len(terms) == 1:
                # one common word: its newest rows, twice as many as asked for, ranked here;
                # bm25() would walk its whole doclist (~180 ms at 1M). (Several common words
                # keep the plan below: their newest rows holding them all, that few, lost
                # evidence at 1M that bm25() over all such rows finds.)
                only = plans[0] if tagged else _untagged(plans[0])
                newest = self._holding_all(table, only, 2 * limit)
                return self._ranked_here(view, newest, scope, terms, limit, exclude_sessions)
            elif not rare:  # all common: rows with all of them first
                every = _plan(view, scope, terms, every=True)[2]
                ids = self._holding_all(
                    table, every if tagged else _untagged(every), UNRANKED_ROWS + 1
                )
                if len(ids) > UNRANKED_ROWS:  # many: bm25() ranks them
                    plans = [every, plans[0]]
                else:
                    found = self._ranked_here(view, ids, scope, terms, limit, exclude_sessions)
                    if len(found) >= limit:
                        return found
                    # fewer than asked for: bm25() over rows with any of the words
        for n, plan in enumerate(plans, start=1):
            found = self._search(
                table, rank, plan if tagged else _untagged(plan), scope, limit, exclude_sessions
            )
            if len(found) >= limit or n == len(plans):
                return found
        return []

    def _search(
        self,
        table: str,
        rank: str,
        match: str,
        scope: str,
        limit: int,
        exclude_sessions: Sequence[str],
    ) -> list[TextMatch]:
        tagged = match.startswith("tag : ") or table == "message_trigram_fts"
        excluded = set(exclude_sessions)
        size = limit + 20 if excluded else limit
        while True:
            # untagged, rows of other scopes come back too: ask for more, keep this scope's
            want = size if tagged else 2 * size + 20
            params = (scope_tag(scope),) if table == "message_trigram_fts" else ()
            with self._lock:
                try:
                    ranked = self._ranked_ids(table, rank, match, params, want)
                    found = self._with_meta(ranked, scope)
                except sqlite3.OperationalError as exc:
                    raise StoreError(
                        f"search failed: {exc}; `hermes sessions reindex` rebuilds the index"
                    ) from None
            kept = [m for m in found if m.session_id not in excluded]
            # an excluded (live) session may fill the candidates: look deeper, boundedly
            if len(kept) >= limit or len(ranked) < want or size >= MAX_CANDIDATES:
                return kept[:limit]
            size *= 4

    def _holding_all(self, table: str, match: str, most: int) -> list[int]:
        """Rowids matching `match` (every word of a query), the newest `most` of them
        (FTS5 walks a doclist backwards as cheaply as forwards)."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?",
                (match, most),
            ).fetchall()
        return [int(r[0]) for r in rows]

    def _ranked_here(
        self,
        view: SearchView,
        ids: list[int],
        scope: str,
        terms: list[str],
        limit: int,
        exclude_sessions: Sequence[str],
    ) -> list[TextMatch]:
        """The best `limit` of rows `ids`, each holding every one of `terms` (all common
        words), ranked by row_scores rather than FTS5's bm25(): its document frequencies
        would walk each word's whole doclist, the bulk of such a query's cost."""
        if not ids:
            return []
        with self._lock:  # (id, session, idx, role, timestamp, name, content)
            rows = self._conn.execute(*_by_ids(_TEXT_ROWS, scope, ids)).fetchall()
        excluded = set(exclude_sessions)
        rows = [r for r in rows if r[1] not in excluded]
        weights = ROW_WEIGHTS if view == "window" else Weights(speaker=0.0)
        texts = [((r[6] or "").lower(), (r[5] or "").lower()) for r in rows]
        scores = bm25_rows(texts, terms, weights)
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], -rows[i][0]))
        # copies of a text tie exactly here (no neighbours in the score): the newest copy
        # of each text first, so a phrase said 500 times cannot take every place
        seen: set[int] = set()
        first: list[int] = []
        again: list[int] = []
        for i in order:
            key = text_key(rows[i][6], rows[i][5])
            (again if key in seen else first).append(i)
            seen.add(key)
            if len(first) >= limit:
                break
        kept = (first + again)[:limit]
        # the sessions' sources only for the rows kept: joined for all of them, the read
        # took half as long again (up to UNRANKED_ROWS rows, a few hundred sessions)
        sources = self._sources(scope, {rows[i][1] for i in kept})
        return [
            _text_match((*rows[i][:5], sources.get(rows[i][1], ""), *rows[i][5:]), scores[i])
            for i in kept
            if rows[i][1] in sources
        ]

    def _sources(self, scope: str, session_ids: set[str]) -> dict[str, str]:
        """Each session's source (sessions of `scope` only)."""
        if not session_ids:
            return {}
        marks = ",".join("?" * len(session_ids))
        with self._lock:
            found = self._conn.execute(
                f"SELECT id, source FROM sessions WHERE scope = ? AND id IN ({marks})",
                (scope, *session_ids),
            ).fetchall()
        return {r[0]: r[1] for r in found}

    def _tag_helps(self, scope: str) -> bool:
        """Whether to confine the FTS query with the scope's token: yes unless the scope
        holds most of the index (then the token's doclist is as long as the index and
        costs more than dropping the few other-scope rows after the query)."""
        mine, total = self._sizes(scope)
        return (mine / total if total else 0.0) < DOMINANT_SHARE

    def _sizes(self, scope: str) -> tuple[int, int]:
        """(messages of `scope`, messages of every scope), remembered for SHARE_TTL_S."""
        now = time.monotonic()
        sizes: dict[str, tuple[float, int, int]] = self.__dict__.setdefault("_scope_sizes", {})
        cached = sizes.get(scope)
        if cached is None or now - cached[0] > SHARE_TTL_S:
            with self._lock:
                mine, total = self._conn.execute(
                    "SELECT COALESCE(SUM(CASE WHEN scope = ? THEN message_count END), 0), "
                    "COALESCE(SUM(message_count), 0) FROM sessions",
                    (scope,),
                ).fetchone()
            sizes[scope] = cached = (now, int(mine), int(total))
        return cached[1], cached[2]

    def _counts(
        self, view: SearchView, scope: str, terms: list[str], tagged: bool
    ) -> dict[str, int]:
        """Rows of the scope (of the index when `tagged` is off) holding each word in
        `view`, up to COMMON_ROWS + 1. The words that pick candidates are those in at most
        COMMON_ROWS rows: a word in many rows of a big scope (a speaker's name, "work")
        would make BM25 score every one of them while it barely ranks; the ranking above
        the store weighs speakers itself."""
        table, _, _ = _plan(view, scope, terms[:1])
        # a word found common stays so for a while: counting its rows walks COMMON_ROWS of
        # them (~0.3 ms each time a name or "work" is asked about); a rare one is recounted
        common: dict[tuple[str, str, bool, int, str], float] = self.__dict__.setdefault(
            "_common_words", {}
        )
        now = time.monotonic()
        counts = {}
        with self._lock:
            for term in terms:
                key = (view, scope, tagged, COMMON_ROWS, term)
                if now - common.get(key, -COMMON_TTL_S) < COMMON_TTL_S:
                    counts[term] = COMMON_ROWS + 1
                    continue
                match = _plan(view, scope, [term])[2]
                match = match if tagged else _untagged(match)
                counts[term] = rows = self._conn.execute(
                    f"SELECT COUNT(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? "
                    f"LIMIT ?)",
                    (match, COMMON_ROWS + 1),
                ).fetchone()[0]
                if rows > COMMON_ROWS:
                    if len(common) >= COMMON_KEPT:
                        common.clear()
                    common[key] = now
        return counts

    def own_words(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, float]:
        """BM25 of the messages' own text (the `message` view) for these messages alone.
        FTS5's bm25() cannot be confined to given rows (neither a rowid list nor a rowid
        per query spares it walking each word's whole doclist: ~11 ms at 1M messages), so
        the windows are split into words by the index's own tokenizer (`_saturated`) and
        scored here as bm25() scores the view: a word's document frequency is its share
        of the index's rows (counted up to COMMON_ROWS + 1, as when picking candidates: a
        word that common weighs little either way), and a row's length is that of its
        whole window (the turns before and after it too), over these rows' average."""
        words = query_terms(terms)
        if not words:
            return {}
        self.catch_up()
        windows = self._rows_by_id(
            "SELECT id, body, before || ' ' || after FROM message_windows", scope, message_ids
        )
        if not windows:
            return {}
        weights = self._saturated(words, windows)
        counts = self._frequencies(scope, words)
        rows = self._sizes(scope)[1]
        scores: dict[int, float] = {}
        for word in words:
            weight = idf(counts[word], rows)
            for message_id, saturated in weights[word].items():
                scores[message_id] = scores.get(message_id, 0.0) + weight * saturated
        return scores

    def close(self) -> None:
        """Close the database in memory that `_saturated` made, if it did."""
        with self._lock:
            words_db = self.__dict__.pop("_words_db", None)
            if words_db is not None:
                words_db.close()

    def _frequencies(self, scope: str, words: list[str]) -> dict[str, int]:
        """`_counts` of the `message` view in the whole index, each remembered for
        SHARE_TTL_S: an inverse document frequency need not follow every new message,
        and counting a word's rows took two statements of every search by meaning."""
        now = time.monotonic()
        known: dict[str, tuple[float, int]] = self.__dict__.setdefault("_frequency", {})
        fresh = [w for w in words if now - known.get(w, (-SHARE_TTL_S, 0))[0] >= SHARE_TTL_S]
        if fresh:
            if len(known) >= COMMON_KEPT:
                known.clear()
            counted = self._counts("message", scope, fresh, tagged=False)
            known.update((w, (now, counted[w])) for w in fresh)
        return {w: known[w][1] for w in words}

    def _saturated(
        self, words: list[str], windows: list[tuple[int, str, str]]
    ) -> dict[str, dict[int, float]]:
        """For each word, BM25's weight of it in each (id, body, turns around) row's body
        that holds it, lengths those of the whole windows over these rows' average, as
        the `message` view's bm25() weighs it before its inverse document frequency:
        the rows go into an FTS5 table of a database in memory (this search's own; the
        same tokenizer), whose bm25() per word, divided by its inverse document frequency
        among these rows, is that weight. (Reading the tokens back by fts5vocab cost ~2
        ms for a page, a temporary table of the store's connection ~5 ms more.)"""
        with self._lock:
            words_db = self.__dict__.get("_words_db")
            if words_db is None:
                words_db = sqlite3.connect(":memory:", check_same_thread=False)
                words_db.execute(
                    f"CREATE VIRTUAL TABLE words USING fts5(body, around, content='', "
                    f"tokenize='{WORDS_TOKENIZER}')"
                )
                self.__dict__["_words_db"] = words_db
            out: dict[str, dict[int, float]] = {}
            try:
                words_db.executemany(
                    "INSERT INTO words (rowid, body, around) VALUES (?, ?, ?)", windows
                )
                for word in words:
                    found = words_db.execute(
                        "SELECT rowid, bm25(words, 1.0, 0.0) FROM words WHERE words MATCH ?",
                        (f"body : {_quote(word)}",),
                    ).fetchall()
                    among = idf(len(found), len(windows))
                    out[word] = {int(r[0]): -float(r[1]) / among for r in found}
            finally:
                words_db.execute("INSERT INTO words (words) VALUES ('delete-all')")
        return out

    def _ranked_ids(
        self, table: str, rank: str, match: str, params: tuple[object, ...], size: int
    ) -> list[tuple[int, float]]:
        """(rowid, score) best first."""
        tagged = " AND tag = ?" if params else ""
        rows = self._conn.execute(
            f"SELECT rowid, {rank} AS score FROM {table} WHERE {table} MATCH ?{tagged} "
            f"ORDER BY score LIMIT ?",
            (match, *params, size),
        ).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def _meta_rows(self, ids: Sequence[int], scope: str) -> list[sqlite3.Row]:
        """(id, session, idx, role, timestamp, source, name, content) of those of `ids`
        that are messages of `scope`."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        return self._conn.execute(
            f"SELECT m.id, m.session_id, m.idx, m.role, m.timestamp, s.source, m.name, "
            f"m.content FROM messages m "
            f"JOIN sessions s ON s.scope = m.scope AND s.id = m.session_id "
            f"WHERE +m.scope = ? AND m.id IN ({marks})",
            (scope, *ids),
        ).fetchall()

    def _with_meta(self, ranked: list[tuple[int, float]], scope: str) -> list[TextMatch]:
        meta = {int(r[0]): r for r in self._meta_rows([r[0] for r in ranked], scope)}
        return [
            _text_match(meta[mid], score)
            for mid, score in sorted(ranked, key=lambda r: (-r[1], r[0]))
            if mid in meta
        ]

    def messages_at(self, scope: str, places: Sequence[tuple[str, int]]) -> list[TextMatch]:
        """The conversational messages at (session id, index) places of `scope`."""
        wanted = list(dict.fromkeys((str(s), int(i)) for s, i in places))
        if not wanted:
            return []
        pairs = ",".join("(?, ?)" for _ in wanted)
        with self._lock:
            # the places drive the join (CROSS JOIN keeps that order): one index lookup
            # each; `(session_id, idx) IN (VALUES ...)` would scan the whole scope
            ids = self._conn.execute(
                f"SELECT m.id FROM (VALUES {pairs}) AS p CROSS JOIN messages m "
                "ON m.scope = ? AND m.session_id = p.column1 AND m.idx = p.column2 "
                "WHERE m.role IN ('user', 'assistant') AND coalesce(m.content, '') <> ''",
                (*(x for place in wanted for x in place), scope),
            ).fetchall()
            return self._with_meta([(int(r[0]), 0.0) for r in ids], scope)

    def tells_when(self, scope: str, message_ids: Sequence[int]) -> set[int]:
        """Those of the messages whose text places something in time (`tells_when()`)."""
        return {m for m, text in self._message_texts(scope, message_ids).items() if says_when(text)}

    def message_snippets(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, str]:
        """Excerpts of the messages' own text around the first matching word, matches
        marked. Done here rather than with FTS5's snippet(): that needs a MATCH per row,
        which costs a scan of the words' doclists each, far too slow on a big index."""
        words = [t for t in dict.fromkeys(t.lower() for t in terms) if t]
        return {
            mid: highlight(text, words)
            for mid, text in self._message_texts(scope, message_ids).items()
        }

    def _message_texts(self, scope: str, message_ids: Sequence[int]) -> dict[int, str]:
        rows = self._rows_by_id(
            f"SELECT id, substr(content, 1, {BODY_CHARS}) FROM messages", scope, message_ids
        )
        return {int(r[0]): r[1] or "" for r in rows}

    def _rows_by_id(self, select: str, scope: str, message_ids: Sequence[int]) -> list[Any]:
        """`select`'s rows for these ids of `scope` (each id once); none for no ids."""
        ids = list(dict.fromkeys(int(i) for i in message_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with self._lock:
            # (+scope: the ids pick the rows; by the scope index it would read them all)
            return self._conn.execute(
                f"{select} WHERE +scope = ? AND id IN ({marks})", (scope, *ids)
            ).fetchall()

    def check_search_index(self) -> SearchIndexHealth:
        """FTS5's own integrity check of every search table against the messages."""
        try:
            with self._lock:
                self.catch_up()
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
                hold_all(self._conn)  # every message, waiting or not
                for table in SEARCH_TABLES:
                    self._conn.execute(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")
                rows = self._conn.execute("SELECT COUNT(*) FROM message_exact").fetchone()[0]
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return int(rows)
