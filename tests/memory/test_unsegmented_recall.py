"""Recall in scripts written without spaces (Japanese, Chinese, Thai, Korean), by words alone.

A word index keeps "来月は京都旅行に行きます" as one token, so "京都旅行" is found only
through the trigram view; these tests go through the ranking the tool uses, on each backend,
with search by meaning off (no semantic index)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hermes.recall.search import search_hits
from hermes.store import NewMessage, Store, open_store
from hermes.unsegmented import CLASS, trigram_terms, unsegmented


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = open_store(store_url)
    yield s
    s.close()


def _say(store: Store, scope: str, session: str, *texts: str) -> None:
    store.ensure_session(scope, session, source="cli")
    store.append_messages(scope, session, [NewMessage("user", t) for t in texts])


def test_a_japanese_phrase_inside_a_sentence_is_found_by_words_alone(store: Store) -> None:
    _say(store, "default", "trip", "来月は京都旅行に行きます", "楽しみですね")
    _say(store, "default", "other", "昨日は雨でした", "I like green tea")
    _say(store, "user:b", "trip", "京都旅行の計画")  # another scope's words stay there
    hits = search_hits(store, "default", "京都旅行")
    assert [(h.session_id, h.message_index) for h in hits][:1] == [("trip", 0)]
    assert search_hits(store, "user:c", "京都旅行") == []


def test_a_question_with_other_particles_still_finds_the_turn(store: Store) -> None:
    _say(store, "default", "trip", "来月は京都旅行に行きます")
    _say(store, "default", "food", "今日は寿司を食べました")
    hits = search_hits(store, "default", "京都旅行はいつですか")
    assert hits and (hits[0].session_id, hits[0].message_index) == ("trip", 0)


def test_latin_questions_do_not_ask_the_trigram_view() -> None:
    assert not unsegmented("When did Jon go to Kyoto?")
    assert trigram_terms("When did Jon go to Kyoto?") == []
    assert trigram_terms("京都") == []  # under three characters: no trigram to look up
    assert trigram_terms("京都旅行") == ["京都旅", "都旅行"]
    assert unsegmented("สวัสดี") and unsegmented("안녕하세요") and CLASS.startswith("[")
