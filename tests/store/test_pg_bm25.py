"""PostgreSQL ranks words matches by BM25 as SQLite's FTS5 does (k1 1.2, b 0.75, the scope's
inverse document frequencies) over its candidates — a word said again counts less than a
second word of the question (saturation), a short message outranks a long one saying the same (length), a rare
word outranks a common one (document frequency), and in the window view a word in the
message itself outranks the same word in a neighbour or the speaker's name (weights)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.store import NewMessage, NewSession, Store, open_store

TEXTS = [
    "kiwi mango",
    "kiwi kiwi kiwi kiwi",
    "kiwi with papaya and lychee and guava and melon and plum",
    "mango alone here",
    "lychee only",
    "the guava was ripe",
    "papaya for breakfast",
    "plum and melon",
    "we ate mango",
    "durian smells",
]


def _fill(store: Store) -> None:
    messages = [
        NewMessage("user" if n % 2 == 0 else "assistant", text, timestamp=1.7e9 + n)
        for n, text in enumerate(TEXTS)
    ]
    store.import_sessions("default", [NewSession("fruit", "import", messages)])


@pytest.fixture
def stores(pg_url: str, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    sqlite = open_store(f"sqlite:///{tmp_path / 'state.db'}")
    pg = open_store(pg_url)
    try:
        for store in (sqlite, pg):
            _fill(store)
        yield sqlite, pg
    finally:
        sqlite.close()
        pg.close()


def _order(store: Store, terms: list[str], view: str) -> list[str]:
    hits = store.search.match_messages("default", terms, view=view, limit=10)  # type: ignore[arg-type]
    return [TEXTS[h.index] for h in hits]


def test_a_score_is_bm25(stores: tuple[Store, Store]) -> None:
    sqlite, pg = stores
    rows = len(TEXTS)
    (durian,) = pg.search.match_messages("default", ["durian"], view="message")
    # one match: its length is the average, so BM25 is the word's IDF, as FTS5 computes it
    assert durian.score == pytest.approx(math.log((rows - 1 + 0.5) / (1 + 0.5)))
    # a rarer word's row first: "durian" is in one row, "lychee" in two
    hits = pg.search.match_messages("default", ["durian", "lychee"], view="message")
    assert TEXTS[hits[0].index] == "durian smells" and len(hits) == 3
    # the same order as SQLite's FTS5 where lengths agree (no stop words, no repeats)
    for terms in (["kiwi", "mango"], ["papaya", "plum", "durian"]):
        expected = _order(sqlite, terms, "exact")
        assert expected and _order(pg, terms, "exact")[:2] == expected[:2]


def test_bm25_in_kind(stores: tuple[Store, Store]) -> None:
    _, pg = stores
    # a second word of the question beats the same word said four times
    assert _order(pg, ["kiwi", "mango"], "message")[0] == "kiwi mango"
    # a short message beats a long one saying the word once
    kiwi = _order(pg, ["kiwi"], "message")
    assert kiwi.index("kiwi mango") < kiwi.index(TEXTS[2])
    # the message itself beats the neighbours whose window holds the word
    assert _order(pg, ["lychee"], "window")[0] == "lychee only"
