"""The first page of hits reordered by what the fusion by rank cannot see (`_first_page`):
each hit's similarity by meaning, that of the turns around it, and its own words' match."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hermes.config.settings import load_settings
from hermes.memory import embeddings
from hermes.recall.ranking import DEFAULT_CONFIG, Ranked, _first_page, rank_messages
from hermes.recall.semantic import SemanticIndex, embed_pending
from hermes.recall.windows import embed_windows
from hermes.store.base import NewMessage
from hermes.store.search_contract import TextMatch
from hermes.store.sqlite import SQLiteStore


class _OwnWords:
    """A searcher whose messages' own words score as given (`own_words`)."""

    def __init__(self, scores: dict[int, float]) -> None:
        self.scores = scores
        self.asked: list[list[int]] = []

    def own_words(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, float]:
        self.asked.append(list(message_ids))
        return {i: self.scores[i] for i in message_ids if i in self.scores}


class _Near:
    """Nearest lists whose similarities are given: (own, before, after, 2 before, 2 after)."""

    alone: list[TextMatch] = []
    in_context: list[TextMatch] = []
    by_speaker: list[TextMatch] = []

    def __init__(self, similar: dict[int, tuple[float, ...]]) -> None:
        self.similar = similar

    def same_as(self, message_ids: Sequence[int]) -> dict[int, int]:
        return {}

    def similarities(self, message_ids: Sequence[int]) -> dict[int, tuple[float, ...]]:
        return {i: self.similar[i] for i in message_ids if i in self.similar}


def _ranked(*scores: float) -> list[Ranked]:
    return [Ranked(i + 1, "s", i + 1, "user", 0.0, s) for i, s in enumerate(scores)]


def test_a_hit_that_says_it_in_its_own_words_and_by_meaning_moves_up() -> None:
    """The fusion put the turn that brought the subject up (1) a little above the one that
    says the detail (2), by their neighbours' words and by rank; the detail is nearer by
    meaning, its own words match better and the turn before it brought the subject up."""
    ranked = _ranked(1.0, 0.95, 0.5)
    searcher = _OwnWords({1: 2.0, 2: 6.0})
    near = _Near({1: (0.30, 0.1, 0.2, 0.0, 0.2), 2: (0.45, 0.2, 0.1, 0.30, 0.0)})
    out = _first_page(searcher, "default", ["detail"], ranked, near, DEFAULT_CONFIG)  # type: ignore[arg-type]
    assert [r.message_id for r in out] == [2, 1, 3]
    assert searcher.asked == [[1, 2, 3]]  # the page's own words, of its hits alone
    off = replace(DEFAULT_CONFIG, page=1)  # a page of one hit: nothing to reorder
    out = _first_page(searcher, "default", ["detail"], ranked, near, off)  # type: ignore[arg-type]
    assert [r.message_id for r in out] == [1, 2, 3]


def test_hits_below_the_page_keep_their_places() -> None:
    ranked = _ranked(1.0, 0.9, 0.8)
    near = _Near({3: (0.9, 0.9, 0.9, 0.9, 0.9)})
    config = replace(DEFAULT_CONFIG, page=2)
    out = _first_page(_OwnWords({3: 9.0}), "default", ["x"], ranked, near, config)  # type: ignore[arg-type]
    assert [r.message_id for r in out] == [1, 2, 3]


@pytest.fixture
def store(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteStore]:
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    s = SQLiteStore(home / "state.db")
    yield s
    s.close()


@pytest.mark.semantic
def test_similarities_are_of_the_message_and_the_turns_around_it(store: SQLiteStore) -> None:
    turns = [
        "Hey! Long time no see.",
        "I adopted a puppy last week, a little beagle.",
        "Aww, what's its name?",
        "Her name is Biscuit and she chews everything.",
        "Ha, puppies do that.",
    ]
    store.ensure_session("default", "s1", source="import", started_at=1_000_000.0)
    store.append_messages(
        "default",
        "s1",
        [
            NewMessage("user" if i % 2 else "assistant", t, timestamp=1_000_000.0 + i)
            for i, t in enumerate(turns)
        ],
    )
    embedder = embeddings.load(load_settings())
    assert embedder is not None
    embed_pending(store, embedder)
    near = SemanticIndex(store, embedder).search("default", "what is the dog called", limit=5)
    ids = sorted(m.message_id for m in near.alone)
    assert len(ids) == 5
    similar = near.similarities(ids)
    own = [similar[i][0] for i in ids]
    # (own, one before, one after, two before, two after, then its window); 0 where the
    # session has none; a window not embedded yet stands in as its own
    assert similar[ids[2]] == (own[2], own[1], own[3], own[0], own[4], own[2])
    assert similar[ids[0]] == (own[0], 0.0, own[1], 0.0, own[2], own[0])
    assert similar[ids[4]] == (own[4], own[3], 0.0, own[2], 0.0, own[4])
    assert near.similarities([10_000]) == {}
    assert embed_windows(store, embedder)[0] == 5
    windowed = near.similarities(ids)
    assert windowed[ids[2]][:5] == similar[ids[2]][:5]
    # the reply read after the question it answers and the turn before that
    query = embedder.encode_query("what is the dog called")
    expected = embedder.encode([" ".join(turns[1:4])]) @ query
    assert np.allclose(windowed[ids[3]][5:], expected, atol=0.01)
    assert np.allclose(windowed[ids[0]][5:], (own[0],), atol=0.01)  # none before


class _Words:
    """A searcher whose window view finds the given matches (and nothing else)."""

    def __init__(self, found: list[TextMatch]) -> None:
        self.found = found

    def match_messages(
        self,
        scope: str,
        terms: Sequence[str],
        *,
        view: str = "window",
        limit: int = 50,
        exclude_sessions: Sequence[str] = (),
    ) -> list[TextMatch]:
        return self.found[:limit] if view == "window" else []

    def messages_at(self, scope: str, places: Sequence[tuple[str, int]]) -> list[TextMatch]:
        return []

    def tells_when(self, scope: str, message_ids: Sequence[int]) -> set[int]:
        return set()


def test_the_best_match_said_by_someone_else_keeps_a_place_in_the_first_ten() -> None:
    """The question names Tim; John said what matches it best (Tim asked, John answered,
    or the question named the wrong one). Tim's twelve weaker matches, tripled by the
    speaker prior, would fill the first ten; John's turn keeps the tenth place."""
    tims = [
        TextMatch(i, f"s{i}", 0, "user", 1000.0 + i, 1.0 - i * 0.02, speaker="Tim")
        for i in range(1, 13)
    ]
    johns = TextMatch(99, "s99", 1, "assistant", 500.0, 2.0, speaker="John")
    searcher = _Words([johns, *tims])
    question = "What book did Tim get in Italy?"
    hits = [r.message_id for r in rank_messages(searcher, "default", question, limit=20)]  # type: ignore[arg-type]
    assert hits.index(99) == 9
    assert set(hits[:9]) <= {t.message_id for t in tims}
    off = replace(DEFAULT_CONFIG, others=0)
    hits = [r.message_id for r in rank_messages(searcher, "default", question, config=off)]  # type: ignore[arg-type]
    assert 99 not in hits[:10]
    # not when it is far down even without the prior
    weak = TextMatch(99, "s99", 1, "assistant", 500.0, 0.1, speaker="John")
    searcher = _Words([*tims, weak])
    hits = [r.message_id for r in rank_messages(searcher, "default", question, limit=20)]  # type: ignore[arg-type]
    assert 99 not in hits[:10]


class _Page(_Words):
    """Window matches as given, and the messages' own words scoring as given."""

    def __init__(self, found: list[TextMatch], own: dict[int, float]) -> None:
        super().__init__(found)
        self.own = _OwnWords(own)

    def own_words(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, float]:
        return self.own.own_words(scope, terms, message_ids)


def test_a_question_in_the_first_person_or_about_now_keeps_its_priors() -> None:
    """The page's weights were fitted on questions about named people: for "my" and "you"
    (the role prior) and "now" (the newest first) the fused order stands."""
    found = [
        TextMatch(1, "s1", 0, "user", 2000.0, 1.0),
        TextMatch(2, "s2", 0, "assistant", 1000.0, 1.0),
    ]
    searcher = _Page(found, {2: 9.0, 1: 1.0})
    near = _Near({1: (0.2, 0.0, 0.0, 0.0, 0.0), 2: (0.7, 0.5, 0.5, 0.5, 0.5)})

    class _Index:
        def prepare(self, *args: object, **kwargs: object) -> None:
            return None  # (nothing to begin: `search` answers at once)

        def search(self, scope: str, query: str, **kwargs: object) -> _Near:
            return near

    def first(question: str) -> int:
        hits = rank_messages(searcher, "default", question, semantic=_Index())  # type: ignore[arg-type]
        return hits[0].message_id

    assert first("Which dog breed was adopted?") == 2  # reordered: 2 is nearer by meaning
    assert first("Which dog breed did I adopt?") == 1  # the user's own turn
    assert first("Which dog breed is adopted now?") == 1  # the newest


def _turns(store: SQLiteStore, session: str, texts: list[str]) -> list[int]:
    store.ensure_session("default", session, source="import", started_at=1_000_000.0)
    records = store.append_messages(
        "default", session, [NewMessage("user", t, timestamp=1_000_000.0) for t in texts]
    )
    return [r.id for r in records]


def test_the_page_s_own_words_are_relative_to_its_best_hit_not_the_scope_s(
    store: SQLiteStore,
) -> None:
    """How well a hit's own words match counts relative to the best of the page: turns
    elsewhere in the scope that match better (fifty short ones saying the word) do not
    change the page's order."""
    plain, detail = _turns(
        store,
        "s1",
        [
            "We met at noon and talked for a long while about work, family and the weather",
            "After work I went home, cooked dinner, watched the news, called my sister "
            "and then finally signed up for the city marathon next spring",
        ],
    )
    ranked = [
        Ranked(plain, "s1", 0, "user", 1_000_000.0, 1.0),
        Ranked(detail, "s1", 1, "user", 1_000_000.0, 0.6),
    ]
    near = _Near({})

    def order() -> list[int]:
        out = _first_page(store.search, "default", ["marathon"], ranked, near, DEFAULT_CONFIG)
        return [r.message_id for r in out]

    assert order() == [detail, plain]
    _turns(store, "s2", ["Marathon!"] * 50)
    assert order() == [detail, plain]


def test_a_question_of_common_words_scores_no_rows_beyond_the_page(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reordering the first page scores its hits' own words, not every row of the scope
    holding one of the question's words (at 1M messages, for a question of common words,
    that was the whole tail of a search by meaning)."""
    from hermes.store import search_index

    monkeypatch.setattr(search_index, "COMMON_ROWS", 3)  # every word below is common
    ids = _turns(store, "s1", [f"Sam will go to the concert with friend {i}" for i in range(30)])
    near = _Near({i: (0.5, 0.0, 0.0, 0.0, 0.0) for i in ids})

    class _Index:
        def prepare(self, *args: object, **kwargs: object) -> None:
            return None  # (nothing to begin: `search` answers at once)

        def search(self, scope: str, query: str, **kwargs: object) -> _Near:
            return near

    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    hits = rank_messages(
        store.search, "default", "When did Sam go to the concert?", semantic=_Index()
    )  # type: ignore[arg-type]
    store.connection.set_trace_callback(None)
    assert len(hits) == 10
    own_view = "bm25(message_windows_fts, 0.0, 1.0, 0.0, 0.0, 0.0)"  # the `message` view
    assert not [s for s in statements if own_view in s]
    # the own words read are the page's hits'
    (read,) = [s for s in statements if "FROM message_windows WHERE" in s]
    ids = read.rsplit("IN (", 1)[1].rstrip(")").split(",")
    assert sorted(map(int, ids)) == sorted(h.message_id for h in hits)
