"""Words search on a scope bigger than its thresholds (shrunk here so a few hundred rows cross
them), on each backend: rare words pick the candidates, a word in no row is ignored, common
words try rows holding all of them first, and only the newest matches are ranked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hermes.store import NewMessage, NewSession, Store, open_store, search_index
from hermes.store.postgres import search


@pytest.fixture
def store(store_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setattr(search, "COMMON_ROWS", 20)
    monkeypatch.setattr(search, "RANKED_ROWS", 30)
    monkeypatch.setattr(search_index, "COMMON_ROWS", 20)
    monkeypatch.setattr(search_index, "UNRANKED_ROWS", 30)
    opened = open_store(store_url)
    texts = [f"kettle garden talk {n}" if n % 3 else f"kettle tulip talk {n}" for n in range(120)]
    texts[5] = "kettle garden with the rare zebra"
    texts[7] = "a zebra alone"
    texts[1] = "kettle kettle kettle kettle"  # the best match for kettle, and an old one
    opened.import_sessions(
        "default",
        [
            NewSession(
                f"s{k}",
                "import",
                [
                    NewMessage("user", texts[n], timestamp=1.7e9 + n)
                    for n in range(k * 10, k * 10 + 10)
                ],
            )
            for k in range(12)
        ],
    )
    yield opened
    opened.close()


def _searcher(store: Store) -> Any:
    """The store's Searcher (`store.search` once the recall package owns it)."""
    return getattr(store, "search", store)


def _texts(store: Store, terms: list[str], view: str = "message", limit: int = 10) -> list[str]:
    hits = _searcher(store).match_messages("default", terms, view=view, limit=limit)
    texts = {}
    for session in {h.session_id for h in hits}:
        for m in store.get_messages("default", session):
            texts[(session, m.index)] = m.content
    return [texts[(h.session_id, h.index)] for h in hits]


def test_a_rare_word_picks_the_candidates(store: Store) -> None:
    found = _texts(store, ["kettle", "zebra"])
    assert sorted(found) == ["a zebra alone", "kettle garden with the rare zebra"]


def test_a_word_in_no_row_is_ignored(store: Store) -> None:
    assert len(_texts(store, ["kettle", "unheardof"])) == 10
    assert _texts(store, ["unheardof"]) == []
    # nor taken for the rare word that picks the candidates when a common one is asked too
    assert len(_texts(store, ["garden", "talk", "unheardof"], view="window")) == 10
    found = _texts(store, ["zebra", "kettle", "unheardof"])
    assert sorted(found) == ["a zebra alone", "kettle garden with the rare zebra"]


def test_a_question_naming_a_word_in_no_row_still_finds_by_its_other_words(store: Store) -> None:
    from hermes.recall.ranking import rank_messages

    ranked = rank_messages(_searcher(store), "default", "Which garden had the xylophonist?")
    assert len(ranked) == 10


def test_common_words_rank_rows_holding_all_of_them_first(store: Store) -> None:
    found = _texts(store, ["garden", "talk"], limit=5)
    assert len(found) == 5 and all("garden" in t and "talk" in t for t in found)
    # fewer rows hold both than asked for: any of the words fills the rest
    found = _texts(store, ["tulip", "garden"], limit=50)
    assert len(found) == 50 and any("tulip" in t for t in found)


def test_only_the_newest_matches_are_ranked(store: Store) -> None:
    found = _texts(store, ["kettle"], limit=5)
    assert len(found) == 5 and "kettle kettle kettle kettle" not in found  # not a candidate
    assert _texts(store, ["kettle", "kettle"], limit=200)[0] == "kettle kettle kettle kettle"
    hits = _searcher(store).match_messages("default", ["kettle"], view="message", limit=10)
    every = _searcher(store).match_messages("default", ["talk"], view="message", limit=200)
    newest = sorted(h.message_id for h in every)[-30:]
    assert {h.message_id for h in hits} <= set(newest)


def test_rows_holding_every_common_word_keep_their_sessions_and_sources(store: Store) -> None:
    """The few rows holding every common word are ranked by the store itself (SQLite reads
    their texts without their sessions, and the sources of the rows kept after): each hit
    carries its own session's source, and an excluded session's rows stay out."""
    store.import_sessions(
        "default",
        [
            NewSession("job", "cron", [NewMessage("user", "tulip garden by the kettle")]),
            NewSession("chat", "import", [NewMessage("user", "tulip garden at noon, talk")]),
            NewSession("live", "import", [NewMessage("user", "tulip garden, tulip garden")]),
        ],
    )
    searcher = _searcher(store)
    hits = searcher.match_messages("default", ["tulip", "garden"], view="message", limit=3)
    assert {(h.session_id, h.source) for h in hits} == {
        ("job", "cron"),
        ("chat", "import"),
        ("live", "import"),
    }
    assert hits[0].session_id == "live"  # both words twice
    kept = searcher.match_messages(
        "default", ["tulip", "garden"], view="message", limit=2, exclude_sessions=["live"]
    )
    assert {(h.session_id, h.source) for h in kept} == {("job", "cron"), ("chat", "import")}
