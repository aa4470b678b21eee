"""A search by meaning runs in its own thread while the words are searched
(`SemanticIndex.prepare`): the question's embedding and the products take the word
search's time instead of coming after it. It guesses which of the scope's speakers the
question names; when the word candidates say otherwise, the search is run again for what
they say, so the hits are always those of the one-after-the-other search. Only in a scope
of OVERLAP_ROWS rows or more (here set lower). A stand-in embedder (conftest.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hermes.memory.embedder import EmbeddingsUnavailableError
from hermes.recall.ranking import DEFAULT_CONFIG, rank_messages
from hermes.recall.semantic import SemanticIndex, embed_pending
from hermes.store.base import NewMessage
from hermes.store.sqlite import SQLiteStore
from tests.memory.conftest import Digests

SCOPE = "default"
SEQUENTIAL = replace(DEFAULT_CONFIG, overlap=False)


class _Watched(Digests):
    """Digests that say when a question's embedding starts, and which questions it got."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.questions: list[str] = []
        self.threads: list[str] = []

    def encode_query(self, text: str) -> np.ndarray:
        self.questions.append(text)
        self.threads.append(threading.current_thread().name)
        self.started.set()
        return super().encode_query(text)


def _watched(store: SQLiteStore) -> tuple[_Watched, SemanticIndex]:
    embedder = _Watched()
    return embedder, SemanticIndex(store, embedder)


@pytest.fixture(autouse=True)
def any_scope_overlaps(monkeypatch: pytest.MonkeyPatch) -> None:
    """(In a scope this small the halves run one after the other unless told.)"""
    monkeypatch.setattr("hermes.recall.semantic.OVERLAP_ROWS", 1)


@pytest.fixture
def store(home: Path, digests: Digests) -> Iterator[SQLiteStore]:
    store = SQLiteStore(home / "state.db")
    said = [
        ("Audrey", "I twisted my knee yesterday, it hurts."),
        ("Bob", "The concert last night was loud and wonderful."),
        ("Audrey", "We adopted a kitten called Miso."),
        ("Bob", "I finally finished my pottery course."),
    ]
    store.ensure_session(SCOPE, "s1", source="api")
    store.append_messages(
        SCOPE,
        "s1",
        [
            NewMessage("user" if who == "Audrey" else "assistant", text, name=who)
            for who, text in said
        ],
    )
    embed_pending(store, digests)
    yield store
    store.close()


def test_the_question_is_embedded_while_the_words_are_searched(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder, index = _watched(store)
    words = store.search
    search_words = words.match_messages
    seen_embedding_start: list[bool] = []

    def match_messages(*args, **kwargs):  # type: ignore[no-untyped-def]
        # one after the other, the embedding would start only after this returns
        seen_embedding_start.append(embedder.started.wait(timeout=5))
        return search_words(*args, **kwargs)

    monkeypatch.setattr(words, "match_messages", match_messages)
    hits = rank_messages(words, SCOPE, "When did Bob go to the concert?", semantic=index)
    assert seen_embedding_start == [True]
    assert embedder.questions == ["When did they go to the concert?"]  # embedded once
    monkeypatch.setattr(words, "match_messages", search_words)
    alone = rank_messages(words, SCOPE, "When did Bob go to the concert?", semantic=index)
    assert hits == alone
    assert hits[0].index == 1


def test_a_guess_the_word_candidates_disprove_is_searched_again(store: SQLiteStore) -> None:
    """Carol's turn is not embedded yet, so the search by meaning does not know her as a
    speaker and keeps her name in the question; the word search finds her turn, so the
    question is embedded again with her name made a pronoun, as it is without the thread."""
    store.append_messages(
        SCOPE, "s1", [NewMessage("user", "I went to the concert with my sister.", name="Carol")]
    )
    embedder, index = _watched(store)
    question = "When did Carol go to the concert?"
    hits = rank_messages(store.search, SCOPE, question, semantic=index)
    assert embedder.questions == [question, "When did they go to the concert?"]
    embedder.questions.clear()
    alone = rank_messages(store.search, SCOPE, question, semantic=index, config=SEQUENTIAL)
    assert embedder.questions == ["When did they go to the concert?"]
    assert [(h.message_id, h.score) for h in hits] == [(h.message_id, h.score) for h in alone]


def test_a_search_whose_scope_has_no_vectors_is_not_started(home: Path, digests: Digests) -> None:
    store = SQLiteStore(home / "state.db")
    try:
        store.ensure_session(SCOPE, "s1", source="api")
        store.append_messages(SCOPE, "s1", [NewMessage("user", "The concert was loud.")])
        embedder, index = _watched(store)
        hits = rank_messages(store.search, SCOPE, "concert", semantic=index)
        assert [h.index for h in hits] == [0]  # by words
        assert embedder.questions == []
    finally:
        store.close()


def test_a_small_scope_searches_one_half_after_the_other(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder, index = _watched(store)
    hits = rank_messages(store.search, SCOPE, "When did Bob go to the concert?", semantic=index)
    assert embedder.threads == ["hermes-recall"]
    monkeypatch.setattr("hermes.recall.semantic.OVERLAP_ROWS", 1_000)
    embedder.threads.clear()
    vectors = store.vectors
    assert vectors is not None
    load, loads = vectors.load, []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        loads.append(kwargs.get("after_id"))
        return load(*args, **kwargs)

    monkeypatch.setattr(vectors, "load", counted)
    question = "When did Bob go to the concert?"
    assert rank_messages(store.search, SCOPE, question, semantic=index) == hits
    assert embedder.threads == [threading.current_thread().name]
    assert len(loads) == 1  # the scope's new vectors asked for once a search, not twice


class _Down(_Watched):
    """An embedding endpoint that cannot be reached: every question fails."""

    def encode_query(self, text: str) -> np.ndarray:
        super().encode_query(text)
        raise EmbeddingsUnavailableError("the embedding endpoint did not answer")


def test_an_embedder_down_in_the_thread_leaves_the_search_to_words_once(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = _Down()
    index = SemanticIndex(store, embedder)
    hits = rank_messages(store.search, SCOPE, "When did Bob go to the concert?", semantic=index)
    assert hits[0].index == 1  # the concert, by words
    assert embedder.threads == ["hermes-recall"]  # asked once, in the thread: not again
    assert "searching by words only" in caplog.text
