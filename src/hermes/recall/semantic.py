"""Semantic search over past messages: vectors in the store, one matrix per scope in memory.

A question rarely repeats the words of its answer ("what class did she enroll in" /
"I signed up for a pottery course"); sentence embeddings find such turns where words do
not. The store keeps one vector per conversational message (`Store.vectors`); this module
fills missing vectors (`embed_pending`: at import, on `hermes sessions reindex`, and in the
background of `hermes serve`; `embed_sentences` on reindex gives messages embedded before
sentence vectors existed theirs) and answers nearest-neighbour queries from a per-process
cache of each scope's matrix (exact dot products; in a big scope, a first pass in fewer
dimensions picks the rows scored exactly: first_pass.py),
which also holds where each message is and who said it, so a search reads back only which
of its hits still exist.
The ranking (ranking.py) fuses these hits with the lexical ones by rank.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from hermes.memory import embeddings
from hermes.memory.embeddings import Embedder
from hermes.recall import first_pass
from hermes.recall.batches import run_batches
from hermes.recall.nearest import DEFAULT_NEAREST, NearestOptions
from hermes.recall.windows import SPANS
from hermes.recall.windows import similarities as window_similarities
from hermes.store.base import Store
from hermes.store.search_contract import StoredVector, TextMatch, VectorStore

log = logging.getLogger(__name__)

RELOAD_S = 300.0  # a full reload (in the background) drops vectors of deleted messages
CACHED_SCOPES = 8
# at or above this cosine similarity, two messages of one speaker say nearly the same
# thing: "I'm thinking about a class, maybe art." and "Ha, I'm thinking about a class,
# maybe art. Anyway." are ~0.95, "That's great, you deserve it!" with and without
# "Honestly, " 0.82, "signed up for a pottery course" and "... a watercolour course" 0.73
# (bench/recall.py: 0.75 and two kept per list did best over its three slices)
NEAR_COPY = 0.75
NEAR_KEPT = 2  # near copies a semantic list keeps: two alike facts ("I twisted my wrist",
# "I twisted my ankle") may both be the answer; the third and later copies go
DEEPEST = 400  # rows a semantic list looks through for near copies, at most
COPY_BLOCK = 128  # rows compared with those before them at once (`_first_saying`)
BATCH = 512  # texts per model call: longer batches sort by length and pad less
PART_WORDS = 6  # a shorter sentence ("It's been a week.") gets no vector of its own
PART_CHARS = 12  # ... nor one of fewer characters in a script without spaces (Japanese)
MAX_PARTS = 8  # sentences of one message embedded on their own, at most
# from this many rows (messages and sentences) a search by meaning runs beside the word search
# (`SemanticIndex.prepare`); in a smaller scope both halves are a few ms, mostly Python, and
# the thread's start and the two halves taking turns at the GIL cost what they would save
OVERLAP_ROWS = first_pass.APPROX_ROWS


def to_bytes(vector: np.ndarray) -> bytes:
    """A message's vectors as stored: its whole text's, then its sentences' (`parts`)."""
    return vector.astype(np.float16).tobytes()


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def parts(text: str) -> list[str]:
    """The sentences of a message that get vectors of their own besides the whole text's.

    A long turn says its point among other sentences ("Hey! The kids are wild this week. I
    signed up for a pottery course. How's work?"); its whole embedding is the average of
    all of them, and a question about the course meets it at half the similarity of the
    sentence alone (0.45 -> 0.22 with MiniLM). A message scores the best of its vectors.
    None for a message of one sentence: its whole vector is that sentence's."""
    sentences = [s for s in _SENTENCE_END.split(text[: embeddings.MAX_CHARS].strip()) if s]
    if len(sentences) < 2:
        return []
    return [s for s in sentences if _says_enough(s)][:MAX_PARTS]


def _says_enough(sentence: str) -> bool:
    """PART_WORDS words, or (a script written without spaces) PART_CHARS characters."""
    words = sentence.split()
    return len(words) >= PART_WORDS or (len(words) == 1 and len(sentence) >= PART_CHARS)


class _Codes:
    """Small integers for strings that many rows share (session ids, speakers, roles,
    sources), and back: a matrix keeps a code per row, not a string."""

    def __init__(self) -> None:
        self.of: dict[str, int] = {}
        self.strings: list[str] = []

    def codes(self, strings: Iterable[str], count: int) -> np.ndarray:
        return np.fromiter((self._code(s) for s in strings), dtype=np.int64, count=count)

    def _code(self, string: str) -> int:
        code = self.of.get(string)
        if code is None:
            code = self.of[string] = len(self.strings)
            self.strings.append(string)
        return code


class _Groups:
    """Rows grouped by a key (a text said again): a small integer per row, from 0."""

    def __init__(self, keys: np.ndarray) -> None:
        _, codes = np.unique(keys, return_inverse=True)
        self.codes = codes.reshape(-1).astype(np.int64)
        self.count = int(self.codes.max()) + 1 if len(self.codes) else 0
        # the rows in group order, and where each group's run starts: one reduceat gives
        # every group's best score
        self._order = np.argsort(self.codes, kind="stable")
        ranked = self.codes[self._order]
        self._starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])

    def best_rows(self, scores: np.ndarray, limit: int) -> np.ndarray:
        """The best row of each of the `limit` best groups, best first (newest first
        among equals). A group's best is found for all groups in one pass (~0.2 ms for
        50k rows), where looking ever deeper among the best rows for `limit` distinct
        groups took ~0.8 ms once a few phrases filled them."""
        if not self.count or limit <= 0:
            return np.zeros(0, dtype=np.int64)
        group_best = np.maximum.reduceat(scores[self._order], self._starts)
        wanted = np.zeros(self.count, dtype=bool)
        wanted[_top(group_best, limit)] = True
        rows = np.flatnonzero(wanted[self.codes] & (scores == group_best[self.codes]))
        rows = rows[np.lexsort((-rows, -scores[rows]))]
        _, first = np.unique(self.codes[rows], return_index=True)  # a group's newest best
        return rows[np.sort(first)][:limit]


@dataclass
class _Places:
    """Per row, what a ranking needs to know of the message (`StoredVector`), kept beside
    its vector so that a search reads nothing back but which hits still exist."""

    index: np.ndarray  # the message's place in its session
    role: np.ndarray  # a code (`_Matrix.labels`)
    timestamp: np.ndarray
    source: np.ndarray  # its session's source, a code (`_Matrix.labels`)
    text_key: np.ndarray
    asks: np.ndarray
    dated: np.ndarray  # says when (`tells_when()`): a "when" question reads no texts back

    @classmethod
    def of(cls, rows: Sequence[StoredVector], labels: _Codes) -> _Places:
        n = len(rows)
        return cls(
            np.fromiter((r.message_index for r in rows), dtype=np.int64, count=n),
            labels.codes((r.role for r in rows), n),
            np.fromiter((r.timestamp for r in rows), dtype=np.float64, count=n),
            labels.codes((r.source for r in rows), n),
            np.fromiter((r.text_key for r in rows), dtype=np.int64, count=n),
            np.fromiter((r.asks for r in rows), dtype=bool, count=n),
            np.fromiter((r.dated for r in rows), dtype=bool, count=n),
        )

    def joined(self, newer: _Places) -> _Places:
        return _Places(
            *(np.concatenate([a, b]) for a, b in zip(self.arrays(), newer.arrays(), strict=True))
        )

    def rows(self, keep: slice) -> _Places:
        return _Places(*(a[keep] for a in self.arrays()))

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (
            self.index,
            self.role,
            self.timestamp,
            self.source,
            self.text_key,
            self.asks,
            self.dated,
        )


@dataclass
class _Matrix:
    ids: np.ndarray  # message ids, ascending
    sessions: np.ndarray  # a code per row (`session_ids`): equal codes, one session
    texts: np.ndarray  # a key per row: equal for one speaker's equal vectors (a text said again)
    speakers: np.ndarray  # a code per row (`speaker_ids`): equal codes, one speaker
    # float32 (stored as float16): numpy's product has no fast half-precision path. A row
    # per message (its whole text), then a row per sentence of the messages that have them (`parts`): one product
    # scores both, and what scored a row, sentence or whole, is one look-up (`_Scores.said`)
    table: np.ndarray
    last_id: int
    loaded_at: float
    session_ids: _Codes
    speaker_ids: _Codes  # `name:<name>` or `role:<role>` (`StoredVector.speaker`)
    labels: _Codes  # roles and sources
    places: _Places
    removed: int  # the scope's deleted vectors before its first rows loaded (`removed`)
    # the row of each sentence's message (ascending: a message's sentences are neighbours)
    part_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _neighbours: tuple[np.ndarray, np.ndarray] | None = None
    _newest: np.ndarray | None = None
    _groups: _Groups | None = None
    _part_groups: tuple[np.ndarray, np.ndarray] | None = None
    _spans: tuple[np.ndarray, np.ndarray] | None = None
    # a big table's projection on its main directions and the table projected
    # (`first_pass`), worked out at the first search and carried over as the matrix grows
    _reduced: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def vectors(self) -> np.ndarray:
        """The whole texts' vectors, a row per message."""
        return self.table[: len(self.ids)]

    @property
    def parts(self) -> np.ndarray:
        """The sentences' vectors, a row per `part_rows` entry."""
        return self.table[len(self.ids) :]

    def similarity(self, query: np.ndarray, weight: float) -> _Scores:
        """Each message's cosine similarity to `query`: the best of its whole text's and
        `weight` times its sentences' (0: the whole text's only). In a big table, exact for
        the rows that a first pass in fewer dimensions found best and their neighbouring
        turns (`first_pass`), and near it for the others (`_Scores.exact` makes more exact)."""
        n = len(self.ids)
        with_parts = bool(len(self.part_rows)) and weight > 0
        table = self.table if with_parts else self.vectors
        if len(table) < first_pass.APPROX_ROWS:
            both = table @ query
            exact = None
        else:
            basis, columns = self.reduced()
            both = first_pass.scores(query, basis, columns[:, : len(table)])
            exact = np.zeros(n, dtype=bool)
        alone, by_part = both[:n], None
        if with_parts:
            by_part = both[n:] * weight
            starts, owners = self.part_groups()
            alone[owners] = np.maximum(alone[owners], np.maximum.reduceat(by_part, starts))
        scores = _Scores(self, alone, by_part, query=query, weight=weight if with_parts else 0.0)
        if exact is not None:
            scores.known = exact
            top = _top(alone, first_pass.SHORTLIST)
            prev, nxt = self.neighbours()
            scores.exact(np.concatenate([top, prev[top], nxt[top]]))
        return scores

    def reduced(self) -> tuple[np.ndarray, np.ndarray]:
        """(projection, the table projected: a column per row): `first_pass`, worked out
        once per matrix."""
        if self._reduced is None:
            basis = first_pass.projection(self.table)
            self._reduced = (basis, first_pass.project(self.table, basis))
        return self._reduced

    def part_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each message's run of sentence vectors starts, and that message's row."""
        if self._part_groups is None:
            rows = self.part_rows
            starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(rows) else rows
            self._part_groups = (starts, rows[starts])
        return self._part_groups

    def sentence_spans(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row, where its run of sentence vectors starts in `part_rows` and how long it
        is (0: none): looked up per search instead of searched for in `part_rows`."""
        if self._spans is None:
            rows = np.arange(len(self.ids))
            first = np.searchsorted(self.part_rows, rows, side="left")
            self._spans = (first, np.searchsorted(self.part_rows, rows, side="right") - first)
        return self._spans

    def text_groups(self) -> _Groups:
        """The rows grouped by text (`texts` key): a text said again is one group."""
        if self._groups is None:
            self._groups = _Groups(self.texts)
        return self._groups

    def newest_of_each_text(self) -> np.ndarray:
        """A mask of the rows that are the newest of their text (`texts` key)."""
        if self._newest is None:
            _, last = np.unique(self.texts[::-1], return_index=True)
            mask = np.zeros(len(self.texts), dtype=bool)
            mask[len(self.texts) - 1 - last] = True
            self._newest = mask
        return self._newest

    def speaker_names(self) -> set[str]:
        """The names (lower case) of the people whose messages the matrix holds."""
        return {k[5:].lower() for k in self.speaker_ids.of if k.startswith("name:")}

    def neighbours(self) -> tuple[np.ndarray, np.ndarray]:
        """Row of the previous and next message of the same session (-1: none)."""
        if self._neighbours is None:
            order = np.lexsort((self.ids, self.sessions))
            same = self.sessions[order][1:] == self.sessions[order][:-1]
            prev = np.full(len(order), -1, dtype=np.int64)
            nxt = np.full(len(order), -1, dtype=np.int64)
            prev[order[1:][same]] = order[:-1][same]
            nxt[order[:-1][same]] = order[1:][same]
            self._neighbours = (prev, nxt)
        return self._neighbours


@dataclass
class _Scores:
    """A query's similarity to each row of a matrix, and what each row said that scored:
    the sentence that carried its score, or its whole text."""

    matrix: _Matrix
    alone: np.ndarray  # per row, the best of whole text and weighted sentence
    by_part: np.ndarray | None  # per sentence vector, its weighted similarity
    _sentence: np.ndarray | None = None
    query: np.ndarray | None = None
    weight: float = 0.0  # of the sentences' similarity (0: the whole text's only)
    known: np.ndarray | None = None  # rows scored exactly (None: all; `_Matrix.similarity`)

    def exact(self, rows: np.ndarray) -> None:
        """Score `rows` (and their sentences) exactly, where the first pass only neared it."""
        if self.known is None or self.query is None:
            return
        # the rows not yet known, ascending and once each (a mask: np.unique sorts them)
        wanted = np.zeros(len(self.known), dtype=bool)
        wanted[rows[rows >= 0]] = True
        rows = np.flatnonzero(wanted & ~self.known)
        if not len(rows):
            return
        self.known[rows] = True
        matrix = self.matrix
        alone = matrix.vectors[rows] @ self.query
        if self.weight > 0:
            has, _, offsets, at = _sentences_of(matrix.sentence_spans(), rows)
            if len(has):
                by_part = (matrix.parts[at] @ self.query) * self.weight
                if self.by_part is not None:
                    self.by_part[at] = by_part
                alone[has] = np.maximum(alone[has], np.maximum.reduceat(by_part, offsets))
        self.alone[rows] = alone

    def said(self, rows: np.ndarray) -> np.ndarray:
        """The vectors `rows` scored by (float32): a sentence's when it carried the row's
        score, else the whole text's. "A friend invited me to a concert, I might go." said
        amid other small talk in many turns is one line said again, not many texts."""
        self.exact(rows)
        table = self.matrix.table
        if self.by_part is None or not len(rows):
            return table[rows]
        if self._sentence is None:  # per row: the sentence that scored it, -1 none, -2 unknown
            self._sentence = np.full(len(self.alone), -2, dtype=np.int64)
        unknown = rows[self._sentence[rows] == -2]
        if len(unknown):
            self._sentence[unknown] = self._scoring_sentence(unknown)
        sentence = self._sentence[rows]
        # the table holds the sentences after the whole texts: one look-up reads both
        at = np.where(sentence >= 0, sentence + len(self.alone), rows)
        return table[at]

    def _scoring_sentence(self, rows: np.ndarray) -> np.ndarray:
        """For each row, the sentence vector that carried its score (-1: its whole text)."""
        assert self.by_part is not None
        out = np.full(len(rows), -1, dtype=np.int64)
        has, counts, offsets, at = _sentences_of(self.matrix.sentence_spans(), rows)
        if not len(has):
            return out
        values = self.by_part[at]
        best = np.maximum.reduceat(values, offsets)
        carried = best >= self.alone[rows[has]]  # the sentence, not the whole, scored
        if carried.any():
            won = values == np.repeat(best, counts)  # the first sentence at its run's best
            first = np.minimum.reduceat(np.where(won, at, len(self.by_part)), offsets)
            out[has[carried]] = first[carried]
        return out


def _sentences_of(
    spans: tuple[np.ndarray, np.ndarray], rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For `rows` (`spans`: `_Matrix.sentence_spans`): which of them have sentence
    vectors (positions in `rows`), how many each, where each one's run starts in the
    last array, and that array: the sentence vectors of those rows, run after run."""
    starts, counts = spans[0][rows], spans[1][rows]
    has = np.flatnonzero(counts)
    counts, starts = counts[has], starts[has]
    offsets = np.cumsum(counts) - counts
    at = np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()))
    return has, counts, offsets, at


Plan = Callable[[set[str]], tuple[str, NearestOptions]]
"""From the names of a scope's speakers, the question to embed and the options to search
with (the ranking's: `hermes.recall.ranking`)."""


class Prepared:
    """A search by meaning run in a thread of its own, started before the search by words
    (`SemanticIndex.prepare`): the model and numpy run outside the GIL, so the search takes
    the time the word search takes rather than adding to it. What it found serves only the
    search that asks what it asked (`result`)."""

    def __init__(
        self, key: tuple[object, ...] | None = None, matrix: _Matrix | None = None
    ) -> None:
        self.key = key
        self.matrix = matrix  # the scope's, brought up to date: a search again uses it too
        self.found: Nearest | None = None
        self.unavailable: embeddings.EmbeddingsUnavailableError | None = None
        self._done = threading.Event()
        if key is None:  # nothing to run
            self._done.set()

    def run(self, work: Callable[[], Nearest]) -> None:
        try:
            self.found = work()
        except embeddings.EmbeddingsUnavailableError as exc:
            self.unavailable = exc
        except Exception:  # the search runs again itself, and meets the error there
            log.debug("a search by meaning in the background failed", exc_info=True)
        finally:
            self._done.set()

    def result(self, key: tuple[object, ...]) -> Nearest | None:
        """What was found, when it was asked as `key` says (None: search afresh). Raises
        the embedder's unavailability, as an encode would."""
        if key != self.key:
            return None
        self._done.wait()
        if self.unavailable is not None:
            raise self.unavailable
        return self.found


@dataclass
class Nearest:
    """Messages nearest to a query: by their own text, and by their text with the
    neighbouring turns' similarity added (an answer split over a teaser and its reply)."""

    alone: list[TextMatch]
    in_context: list[TextMatch]
    scores: _Scores | None = None
    by_speaker: list[TextMatch] = field(default_factory=list)
    # message ids -> their windows' similarities to the query (`hermes.recall.windows`)
    windows: Callable[[Sequence[int]], dict[int, tuple[float, ...]]] | None = None

    def same_as(self, message_ids: Sequence[int]) -> dict[int, int]:
        """For messages given best first: each one that says again what an earlier one
        said (same speaker, cosine >= NEAR_COPY) mapped to that earlier one. Messages
        without a vector in the index are left out."""
        if self.scores is None or not message_ids:
            return {}
        matrix = self.scores.matrix
        ids = np.asarray(message_ids, dtype=np.int64)
        at = np.searchsorted(matrix.ids, ids)
        at = np.minimum(at, len(matrix.ids) - 1)
        known = matrix.ids[at] == ids
        rows, ids = at[known], ids[known]
        if not len(rows):
            return {}
        first = _first_saying(rows, self.scores)
        return {int(ids[i]): int(ids[f]) for i, f in enumerate(first) if f != i}

    def similarities(self, message_ids: Sequence[int]) -> dict[int, tuple[float, ...]]:
        """Each message's similarity to the query (as the lists score it: the best of its
        whole text and its weighted best sentence), then that of the turns one before, one
        after, two before and two after it in its session (0 where there is none), whether
        or not they made a list, then that of its window (`hermes.recall.windows`: its own
        where that is not embedded yet). Messages without a vector are left out."""
        if self.scores is None or not message_ids:
            return {}
        matrix = self.scores.matrix
        ids = np.asarray(message_ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(matrix.ids, ids), len(matrix.ids) - 1)
        known = matrix.ids[at] == ids
        rows, ids = at[known], ids[known]
        prev, nxt = matrix.neighbours()
        before, after = prev[rows], nxt[rows]
        before2 = np.where(before >= 0, prev[before], -1)
        after2 = np.where(after >= 0, nxt[after], -1)
        self.scores.exact(np.concatenate([rows, before, after, before2, after2]))
        alone = self.scores.alone
        columns = [alone[rows]] + [
            np.where(other >= 0, alone[other], 0.0) for other in (before, after, before2, after2)
        ]
        listed = ids.tolist()
        windows = self.windows(listed) if self.windows is not None else {}
        own = (float(x) for x in columns[0])
        return {
            int(i): (*(float(c[k]) for c in columns), *windows.get(i, (mine,) * len(SPANS)))
            for k, (i, mine) in enumerate(zip(listed, own, strict=True))
        }


class SemanticIndex:
    """Nearest messages of a scope to a query, by cosine similarity of their embeddings."""

    def __init__(self, store: Store, embedder: Embedder, *, max_vectors: int = 50_000) -> None:
        # weak: the per-process cache of indexes must not keep closed stores alive
        self._store = weakref.ref(store)
        self.embedder = embedder
        self.max_vectors = max_vectors
        self._cache: OrderedDict[str, _Matrix] = OrderedDict()
        self._reloading: set[str] = set()  # scopes being loaded afresh (`_reload_later`)
        self._lock = threading.Lock()

    @property
    def store(self) -> Store:
        store = self._store()
        if store is None:
            raise RuntimeError("the store of this semantic index was closed")
        return store

    def prepare(
        self, scope: str, plan: Plan, *, limit: int, exclude_sessions: Sequence[str] = ()
    ) -> Prepared:
        """Start in another thread the search that `plan` makes of the scope's speakers'
        names; `search(prepared=...)` takes its result when it asks the same."""
        matrix = self._matrix(scope)  # here: bringing it up to date reads the store,
        if matrix is None or len(matrix.table) < OVERLAP_ROWS or limit <= 0:  # whose lock
            return Prepared(matrix=matrix)  # the word search is about to hold
        query, options = plan(matrix.speaker_names())
        removed = self._removed(scope)
        prepared = Prepared(_key(scope, query, limit, exclude_sessions, options), matrix)

        def work() -> Nearest:
            vector = np.asarray(self.embedder.encode_query(query), dtype=np.float32)
            return self._nearest(scope, matrix, vector, limit, exclude_sessions, options, removed)

        threading.Thread(
            target=prepared.run, args=(work,), name="hermes-recall", daemon=True
        ).start()
        return prepared

    def search(
        self,
        scope: str,
        query: str,
        *,
        limit: int,
        exclude_sessions: Sequence[str] = (),
        options: NearestOptions = DEFAULT_NEAREST,
        prepared: Prepared | None = None,
    ) -> Nearest:
        """The `limit` messages of `scope` nearest to `query`, best first (score = cosine,
        of the whole text or of its best sentence (`parts`), plus its neighbours' in
        context), scored and listed as `options` say (`hermes.recall.nearest`)."""
        try:
            if prepared is not None:
                key = _key(scope, query, limit, exclude_sessions, options)
                found = prepared.result(key)
                if found is not None:
                    return found
            matrix = prepared.matrix if prepared is not None else None
            matrix = matrix if matrix is not None else self._matrix(scope)
            if matrix is None or not len(matrix.ids) or limit <= 0:
                return Nearest([], [])
            vector = np.asarray(self.embedder.encode_query(query), dtype=np.float32)
        except embeddings.EmbeddingsUnavailableError as exc:  # an endpoint down: words only
            log.warning("searching by words only: %s", exc)
            return Nearest([], [])
        removed = self._removed(scope)
        return self._nearest(scope, matrix, vector, limit, exclude_sessions, options, removed)

    def _removed(self, scope: str) -> int:
        vectors = self.store.vectors
        assert vectors is not None  # (a matrix was loaded from them)
        return vectors.removed(scope)

    def _nearest(
        self,
        scope: str,
        matrix: _Matrix,
        query_vector: np.ndarray,
        limit: int,
        exclude_sessions: Sequence[str],
        options: NearestOptions,
        removed: int,
    ) -> Nearest:
        """`search` once the question is embedded; `removed`: the scope's count of deleted
        vectors, read before (`VectorStore.removed`)."""
        context, distinct, near_copies = options.context, options.distinct, options.near_copies
        speakers, sentences = options.speakers, options.sentences
        similarity = matrix.similarity(query_vector, sentences)
        if not options.sentence_copies:
            similarity.by_part = None
        alone = similarity.alone
        prev, nxt = matrix.neighbours()
        # -1 (no neighbour) reads the -1.0 put after the last row
        padded = np.append(alone, np.float32(-1.0))
        around = np.maximum(padded[prev], padded[nxt])
        in_context = alone + context * np.maximum(around, 0.0)
        sessions = matrix.session_ids.of
        codes = [sessions[s] for s in exclude_sessions if s in sessions]
        if codes:
            hidden = np.isin(matrix.sessions, codes)
            alone, in_context = (
                np.where(hidden, -np.inf, alone),
                np.where(hidden, -np.inf, in_context),
            )
        scored = [alone, in_context]
        wanted = {s.lower() for s in speakers}
        named = [
            c
            for k, c in matrix.speaker_ids.of.items()
            if k.startswith("name:") and k[5:].lower() in wanted
        ]
        theirs = None
        if named:  # a look-up per row: ~4x faster than np.isin over the rows
            chosen = np.zeros(len(matrix.speaker_ids.strings), dtype=bool)
            chosen[named] = True
            theirs = chosen[matrix.speakers]
        if theirs is not None:
            scored.append(np.where(theirs, alone, -np.inf))
        groups = matrix.text_groups() if distinct else None
        picks: list[tuple[np.ndarray, _Groups | None]] = [(x, groups) for x in scored]
        if distinct and not codes:
            # a text said again is the same vector, so by its own similarity all its rows
            # tie: its newest row stands for it, and one top-k finds distinct texts (picking
            # the best of each group looked deeper, again and again, among many repeats)
            once = matrix.newest_of_each_text()
            picks[0] = (np.where(once, alone, -np.inf), None)
            if theirs is not None:
                picks[2] = (np.where(once & theirs, alone, -np.inf), None)
        if distinct and near_copies:
            tops = _nearest_rows(picks, similarity, limit)
        else:
            tops = [_best_rows(x, g, limit) for x, g in picks]
        rows = np.unique(np.concatenate(tops)) if tops else np.zeros(0, dtype=np.int64)
        # the matrix may be up to RELOAD_S old: a message deleted or edited since is no hit.
        # Which hits still exist is asked (~1 ms at 1M) only once a vector of the scope was
        # deleted after the matrix began to load
        vectors = self.store.vectors
        assert vectors is not None  # (a matrix was loaded from them)
        there = None
        if removed != matrix.removed:
            there = vectors.still_embedded(self.embedder.name, scope, matrix.ids[rows].tolist())
        lists = [
            _matches(matrix, top, scores, there) for top, scores in zip(tops, scored, strict=True)
        ]
        by_speaker = lists[2] if len(lists) > 2 else []
        windows = partial(window_similarities, self.store, self.embedder.name, scope, query_vector)
        return Nearest(
            lists[0], lists[1], scores=similarity, by_speaker=by_speaker, windows=windows
        )

    def _matrix(self, scope: str) -> _Matrix | None:
        vectors = self.store.vectors
        if vectors is None:
            return None
        with self._lock:
            cached = self._cache.get(scope)
            if cached is not None and time.monotonic() - cached.loaded_at > RELOAD_S:
                self._reload_later(scope)  # meanwhile the loaded one serves, grown as ever
            matrix = self._grown(cached, scope, vectors)
            self._cache[scope] = matrix
            self._cache.move_to_end(scope)
            while len(self._cache) > CACHED_SCOPES:
                self._cache.popitem(last=False)
            return matrix

    def _grown(self, cached: _Matrix | None, scope: str, vectors: VectorStore) -> _Matrix:
        """`cached` with the vectors stored since it loaded (None: all of them, loaded now)."""
        # read before the load: a vector deleted while it runs counts as deleted since
        removed = cached.removed if cached is not None else vectors.removed(scope)
        rows = vectors.load(
            self.embedder.name,
            scope,
            after_id=cached.last_id if cached else 0,
            newest=self.max_vectors,  # (older ones would be cut at once)
        )
        if rows or cached is None:
            return self._extend(cached, rows, time.monotonic(), removed)
        return cached

    def _reload_later(self, scope: str) -> None:
        """Load `scope`'s vectors afresh in the background (called under the lock). A full
        reload takes ~0.6 s at 50,000 vectors: a search that waited for it would stall."""
        if scope in self._reloading:
            return
        self._reloading.add(scope)
        threading.Thread(
            target=self._reload, args=(scope,), name="hermes-vectors-reload", daemon=True
        ).start()

    def _reload(self, scope: str) -> None:
        try:
            vectors = self.store.vectors
            assert vectors is not None  # (a matrix was loaded from them)
            fresh = self._grown(None, scope, vectors)  # not under the lock: searches go on
            # what a first search would work out, worked out here
            fresh.neighbours(), fresh.newest_of_each_text(), fresh.text_groups()
            fresh.sentence_spans()
            if len(fresh.table) >= first_pass.APPROX_ROWS:
                fresh.reduced()
            with self._lock:
                if scope in self._cache:  # (not left out of the cache meanwhile)
                    self._cache[scope] = self._grown(fresh, scope, vectors)
        except Exception:  # the store closed or failed: the next search loads it again
            log.warning("reloading the vectors of a scope failed", exc_info=True)
            with self._lock:
                self._cache.pop(scope, None)
        finally:
            with self._lock:
                self._reloading.discard(scope)

    def _extend(
        self, cached: _Matrix | None, rows: list[StoredVector], now: float, removed: int
    ) -> _Matrix:
        session_ids = cached.session_ids if cached is not None else _Codes()
        speaker_ids = cached.speaker_ids if cached is not None else _Codes()
        labels = cached.labels if cached is not None else _Codes()
        n = len(rows)
        ids = np.fromiter((r.message_id for r in rows), dtype=np.int64, count=n)
        sessions = session_ids.codes((r.session_id for r in rows), n)
        texts = np.fromiter((hash((r.vector, r.speaker)) for r in rows), dtype=np.int64, count=n)
        speakers = speaker_ids.codes((r.speaker for r in rows), n)
        places = _Places.of(rows, labels)
        size = 2 * self.embedder.dimensions  # bytes of one float16 vector
        new = np.frombuffer(b"".join(r.vector[:size] for r in rows), dtype=np.float16)
        new = new.reshape(n, self.embedder.dimensions).astype(np.float32)
        extra = [
            (at, r.vector[size:])
            for at, r in enumerate(rows)
            if len(r.vector) > size and not len(r.vector) % size
        ]
        parts = np.frombuffer(b"".join(b for _, b in extra), dtype=np.float16)
        parts = parts.reshape(-1, self.embedder.dimensions).astype(np.float32)
        part_rows = np.repeat(
            np.fromiter((at for at, _ in extra), dtype=np.int64, count=len(extra)),
            [len(b) // size for _, b in extra],
        ).astype(np.int64)
        vector_blocks, part_blocks = [new], [parts]
        if cached is not None and len(cached.ids):
            part_rows = np.concatenate([cached.part_rows, part_rows + len(cached.ids)])
            vector_blocks.insert(0, cached.vectors)
            part_blocks.insert(0, cached.parts)
            ids = np.concatenate([cached.ids, ids])
            sessions = np.concatenate([cached.sessions, sessions])
            texts = np.concatenate([cached.texts, texts])
            speakers = np.concatenate([cached.speakers, speakers])
            places = cached.places.joined(places)
        if len(ids) > self.max_vectors:  # the newest messages are kept
            cut = len(ids) - self.max_vectors
            keep = slice(cut, None)
            ids, sessions, texts = ids[keep], sessions[keep], texts[keep]
            speakers, places = speakers[keep], places.rows(keep)
            kept_parts = part_rows >= cut
            part_rows = part_rows[kept_parts] - cut
        # the oldest messages' sentences go first (their whole texts stay): memory and
        # search time at most doubled
        part_rows = part_rows[-self.max_vectors :]
        # one copy: the newest rows of each kind, whole texts first
        blocks = _last_rows(vector_blocks, len(ids)) + _last_rows(part_blocks, len(part_rows))
        table = np.concatenate(blocks) if blocks else new.copy()
        reduced = None
        if cached is not None and cached._reduced is not None and len(cached.ids):
            # the grown table in the same projection: only the new rows are projected
            basis, old = cached._reduced
            whole = [old[:, : len(cached.ids)], first_pass.project(new, basis)]
            said = [old[:, len(cached.ids) :], first_pass.project(parts, basis)]
            columns = first_pass.last_columns(whole, len(ids))
            columns += first_pass.last_columns(said, len(part_rows))
            reduced = (basis, np.concatenate(columns, axis=1))
        last = int(ids[-1]) if len(ids) else 0
        loaded_at = cached.loaded_at if cached is not None else now
        return _Matrix(
            ids,
            sessions,
            texts,
            speakers,
            table,
            last,
            loaded_at,
            session_ids,
            speaker_ids,
            labels,
            places,
            removed,
            part_rows,
            _reduced=reduced,
        )


def _key(
    scope: str, query: str, limit: int, exclude: Sequence[str], options: NearestOptions
) -> tuple[object, ...]:
    return (scope, query, limit, tuple(exclude), options)


def _last_rows(blocks: list[np.ndarray], count: int) -> list[np.ndarray]:
    """Views of the last `count` rows of `blocks` taken one after another."""
    out: list[np.ndarray] = []
    for block in reversed(blocks):
        if count <= 0:
            break
        out.insert(0, block[-count:] if count < len(block) else block)
        count -= len(block)
    return out


def _matches(
    matrix: _Matrix, top: np.ndarray, scores: np.ndarray, there: set[int] | None
) -> list[TextMatch]:
    """The rows `top` of a list as matches scored `scores`, leaving out those gone from
    the store (not in `there`; None: none is gone) and those scored -inf (not listed)."""
    p = matrix.places
    sessions, speakers, labels = (
        matrix.session_ids.strings,
        matrix.speaker_ids.strings,
        matrix.labels.strings,
    )
    # whole arrays to Python at once: per-element numpy access is ~10x slower
    columns = zip(
        matrix.ids[top].tolist(),
        scores[top].tolist(),
        matrix.sessions[top].tolist(),
        p.index[top].tolist(),
        p.role[top].tolist(),
        p.timestamp[top].tolist(),
        p.source[top].tolist(),
        matrix.speakers[top].tolist(),
        p.text_key[top].tolist(),
        p.asks[top].tolist(),
        p.dated[top].tolist(),
        strict=True,
    )
    out = []
    for mid, score, session, index, role, when, source, speaker, key, asks, dated in columns:
        if score == -np.inf or (there is not None and mid not in there):
            continue
        said_by = speakers[speaker]
        name = said_by[5:] if said_by.startswith("name:") else None
        out.append(
            TextMatch(
                mid,
                sessions[session],
                index,
                labels[role],
                when,
                score,
                labels[source],
                name,
                key,
                asks,
                dated=dated,
            )
        )
    return out


def _best_rows(scores: np.ndarray, groups: _Groups | None, limit: int) -> np.ndarray:
    """Rows of the `limit` best scores, best first (newest first among equals); with
    `groups`, only the best row of each group: the best of every group is found at once,
    so a phrase repeated a thousand times costs nothing more, and never a shorter list."""
    if groups is not None:
        return groups.best_rows(scores, limit)
    top = _top(scores, limit * 2)  # ties at the cut: the newest of them are among these
    return top[np.lexsort((-top, -scores[top]))][:limit]


def _top(scores: np.ndarray, count: int) -> np.ndarray:
    """The positions of the `count` highest scores, in no order; none scored -inf (left out
    of the list) when fewer than `count` are not."""
    n = len(scores)
    if count >= n:
        return np.arange(n)
    listed = np.flatnonzero(scores != -np.inf)
    if len(listed) < n:
        # argpartition slows down many times over among equal values: a list of one
        # speaker's turns, or of each text's newest row, is mostly -inf
        if len(listed) <= count:
            return listed
        kept = scores[listed]
        return listed[np.argpartition(kept, len(kept) - count)[len(kept) - count :]]
    return np.argpartition(scores, n - count)[n - count :]


def _nearest_rows(
    lists: list[tuple[np.ndarray, _Groups | None]], similarity: _Scores, limit: int
) -> list[np.ndarray]:
    """The `limit` best rows of each list of scores, a text said again listed once (word
    for word) or NEAR_KEPT times (nearly: `_first_saying`). A list whose copies leave it
    short looks deeper, up to DEEPEST rows (one speaker's list is mostly copies)."""
    n = len(lists[0][0])
    out = []
    for scores, groups in lists:
        want = limit * 2
        looked, first = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        while True:
            top = _best_rows(scores, groups, want)
            # a deeper look's best rows begin with the last look's (the order is total):
            # only the new rows are compared, with all before them
            known = len(looked) if np.array_equal(top[: len(looked)], looked) else 0
            first = _first_saying(top, similarity, first[:known])
            kept = top[_nth(_copy_groups(first)) < NEAR_KEPT][:limit]
            if len(kept) >= limit or want >= min(n, DEEPEST):
                break
            looked, want = top, min(n, DEEPEST, want * 2)
        out.append(kept)
    return out


def _copy_groups(first: np.ndarray) -> np.ndarray:
    """A label per row (best first), from each row's first near copy (`_first_saying`):
    the position of the first row of its group (a copy of a copy belongs to the first
    one's group)."""
    root = first
    while True:
        up = root[root]
        if np.array_equal(up, root):
            return root
        root = up


def _nth(labels: np.ndarray) -> np.ndarray:
    """For each position: how many earlier positions hold the same label."""
    order = np.argsort(labels, kind="stable")
    ranked = labels[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(labels)]))
    nth = np.empty(len(labels), dtype=np.int64)
    nth[order] = np.arange(len(labels)) - run_start
    return nth


def _first_saying(rows: np.ndarray, scores: _Scores, known: np.ndarray | None = None) -> np.ndarray:
    """For `rows` best first: the position of the first row of the same speaker whose
    vector (`_Scores.said`) is within NEAR_COPY of each one's (its own position when none
    is before it). `known`: the answer for a first part of `rows`, worked out before."""
    vectors = scores.said(rows)
    speakers = scores.matrix.speakers[rows]
    first = np.arange(len(rows))
    done = 0
    if known is not None:
        done = len(known)
        first[:done] = known
    # a row is only compared with those before it: block by block, the products above the
    # diagonal (a third of them at 400 rows) are never computed
    for start in range(done, len(rows), COPY_BLOCK):
        end = min(len(rows), start + COPY_BLOCK)
        near = (vectors[start:end] @ vectors[:end].T) >= NEAR_COPY
        near &= speakers[start:end, None] == speakers[None, :end]
        near[np.arange(end - start), np.arange(start, end)] = True  # itself, if none before
        first[start:end] = near.argmax(axis=1)
    return first


def embed_pending(
    store: Store,
    embedder: Embedder,
    *,
    scope: str | None = None,
    limit: int | None = None,
    after_id: int = 0,
    starts: Mapping[str, int] | None = None,
    progress: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[int, int]:
    """Embed messages that have no vector yet (of `scope`, or all; none older than their
    scope's start in `starts`: `VectorStore.newest_starts`); (embedded, last id)."""
    vectors = store.vectors
    if vectors is None:
        return 0, after_id

    def step(after: int, size: int) -> tuple[int, int]:
        rows = vectors.pending(
            embedder.name, scope=scope, after_id=after, limit=size, starts=starts
        )
        if not rows:
            return 0, after
        pieces = [[text, *parts(text)] for _, _, text in rows]
        encoded = embedder.encode([piece for said in pieces for piece in said])
        ends = np.cumsum([len(said) for said in pieces]).tolist()
        vectors.put(
            embedder.name,
            [
                (mid, sc, to_bytes(encoded[end - len(said) : end]))
                for (mid, sc, _), said, end in zip(rows, pieces, ends, strict=True)
            ],
        )
        return len(rows), rows[-1][0]

    return run_batches(step, BATCH, after_id, limit, progress, should_stop)


def embed_sentences(
    store: Store,
    embedder: Embedder,
    *,
    scope: str | None = None,
    starts: Mapping[str, int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[int, int]:
    """Give messages embedded before sentences got vectors of their own (one whole-text
    vector) their sentences' vectors, after the whole text's they keep; (messages looked
    at, messages given sentence vectors). Only the sentences are encoded; as in
    `embed_pending`, none older than their scope's start in `starts`."""
    vectors = store.vectors
    if vectors is None:
        return 0, 0
    size = 2 * embedder.dimensions  # bytes of one float16 vector
    seen = upgraded = after_id = 0
    while rows := vectors.whole_only(
        embedder.name, size, scope=scope, after_id=after_id, starts=starts
    ):
        split = [(row, said) for row in rows if (said := parts(row[2]))]
        if split:
            encoded = embedder.encode([s for _, said in split for s in said])
            ends = np.cumsum([len(said) for _, said in split]).tolist()
            vectors.put(
                embedder.name,
                [
                    (mid, sc, whole + to_bytes(encoded[end - len(said) : end]))
                    for ((mid, sc, _, whole), said), end in zip(split, ends, strict=True)
                ],
            )
        after_id = rows[-1][0]
        seen += len(rows)
        upgraded += len(split)
        if progress is not None:
            progress(len(rows))
    return seen, upgraded
