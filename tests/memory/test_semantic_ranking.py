"""Ranking rules that need meaning (the embedding model): the named person's own turns
searched by meaning, and a question naming a month answered from that month. Each test
also shows that with the rule off the answer is lost."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.memory import embeddings
from hermes.recall.nearest import NearestOptions
from hermes.recall.ranking import DEFAULT_CONFIG, rank_messages
from hermes.recall.semantic import SemanticIndex, embed_pending
from hermes.store.base import NewMessage
from hermes.store.sqlite import SQLiteStore

pytestmark = pytest.mark.semantic


@pytest.fixture
def store(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteStore]:
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    s = SQLiteStore(home / "state.db")
    yield s
    s.close()


def _index(store: SQLiteStore) -> SemanticIndex:
    embedder = embeddings.load(load_settings())
    assert embedder is not None
    embed_pending(store, embedder)
    return SemanticIndex(store, embedder)


def _say(store: SQLiteStore, session: str, turns: list[tuple[str, str]], ts: float) -> None:
    """A session of (speaker, text) turns, the first speaker as the user."""
    store.ensure_session("default", session, source="import", started_at=ts)
    first = turns[0][0]
    store.append_messages(
        "default",
        session,
        [
            NewMessage("user" if who == first else "assistant", text, name=who, timestamp=ts + i)
            for i, (who, text) in enumerate(turns)
        ],
    )


def _places(hits) -> list[tuple[str, int]]:
    return [(h.session_id, h.index) for h in hits]


def test_the_named_persons_own_turns_are_searched_by_meaning(store: SQLiteStore) -> None:
    """150 other people say they enrolled in a class, each nearer the question by meaning
    than Audrey's own words are, so a search over everyone's turns lists them all before
    hers; her turn shares no word with the question and she says much else, so her name
    alone does not pick it either. Searching her turns by meaning finds it."""
    for i in range(150):
        _say(
            store,
            f"o{i:03d}",
            [
                (f"Person{i}", f"I enrolled in a class at the college, lesson {i} was fun."),
                (f"Friend{i}", "Nice, good for you!"),
            ],
            ts=1_000_000.0 + i * 100,
        )
    chatter = [
        "The weather finally turned, we had a picnic in the park.",
        "Work has been hectic, lots of meetings and deadlines.",
        "My family came over for dinner, it was loud but fun.",
        "We went hiking along the river, the trail was muddy.",
    ]
    for s in range(60):
        _say(
            store,
            f"a{s:02d}",
            [("Audrey", chatter[s % 4] + f" Day {s}."), ("Andrew", "Ha, sounds like a week.")],
            ts=2_000_000.0 + s * 100,
        )
    answer = "Signed up for watercolour lessons on Monday evenings, ten weeks of painting!"
    _say(store, "audrey", [("Audrey", answer), ("Andrew", "Ooh, lovely.")], ts=3_000_000.0)
    index = _index(store)
    question = "What class did Audrey enroll in?"

    near = index.search(
        "default",
        "What class did they enroll in?",
        limit=100,
        options=NearestOptions(speakers=("audrey",)),
    )
    assert ("audrey", 0) not in _places(near.alone)  # everyone's list: 100 other people
    assert ("audrey", 0) in _places(near.by_speaker)[:3]
    assert {m.speaker for m in near.by_speaker} == {"Audrey"}

    hits = rank_messages(store.search, "default", question, semantic=index)
    assert _places(hits)[0] == ("audrey", 0)


def test_a_question_naming_a_month_is_answered_from_that_month(store: SQLiteStore) -> None:
    """ "What was Dave up to in May 2023?" is nearer, by meaning, to Dave asking about the
    weekend (in any month) than to his news from May; the semantic lists keep only turns
    from May, so they cannot outvote the month's turns the words found."""
    asks = [
        "What are your plans for the weekend?",
        "So what are you up to this weekend?",
        "Any plans for the weekend?",
        "What are you doing this weekend, anything fun?",
    ]
    chat = [
        "Work has been hectic, lots of meetings.",
        "The weather finally turned, we had a picnic.",
        "My family came over for dinner, loud but fun.",
        "We went hiking along the river, the trail was muddy.",
    ]
    news = "We signed the lease on an apartment in Austin, moving day is soon."
    start = datetime(2023, 1, 9, 19, tzinfo=UTC)
    for i in range(30):
        day = start + timedelta(days=10 * i)
        turns = [
            ("Dave", f"{chat[i % 4]} (week {i})"),
            ("Calvin", "Ha, same here."),
            ("Dave", f"{asks[i % 4]} Week {i}?"),
            ("Calvin", "Not much, resting."),
        ]
        if day.month == 5 and i % 2 == 0:
            turns.insert(2, ("Dave", news))
        _say(store, f"s{i:02d}", turns, ts=day.timestamp())
    index = _index(store)
    question = "What was Dave up to in May 2023?"
    may = {"s12", "s13", "s14"}
    news = {("s12", 2), ("s14", 2)}
    hits = rank_messages(store.search, "default", question, semantic=index)
    assert {sid for sid, _ in _places(hits)[:7]} <= may  # the month's turns come first
    assert news & set(_places(hits)[:7])  # the news among them
    anytime = replace(DEFAULT_CONFIG, period_only=False)
    hits = rank_messages(store.search, "default", question, config=anytime, semantic=index)
    assert not {sid for sid, _ in _places(hits)[:7]} <= may


class _Asked:
    """`store.search` recording which messages a ranking asks `tells_when` about."""

    def __init__(self, searcher: object) -> None:
        self._searcher = searcher
        self.asked: list[int] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._searcher, name)

    def tells_when(self, scope: str, message_ids: list[int]) -> set[int]:
        self.asked += message_ids
        return self._searcher.tells_when(scope, message_ids)  # type: ignore[attr-defined]


def test_a_when_question_reads_no_text_of_what_meaning_alone_found(store: SQLiteStore) -> None:
    """A search by meaning's hits say whether they tell when (their rows carry it), so a
    question asking when reads back only the word matches' texts, and ranks as before."""
    _say(store, "told", [("Ann", "I ran a charity race last Saturday.")], ts=1_000.0)
    _say(store, "later", [("Ann", "The charity race photos are online.")], ts=9_000.0)
    _say(store, "meant", [("Ann", "Finished the fundraising marathon two weeks ago!")], ts=5_000)
    _say(store, "other", [("Ann", "Finished the fundraising marathon, so proud!")], ts=6_000.0)
    index = _index(store)
    question = "When was the charity race?"

    near = index.search("default", question, limit=10)
    dated = {m.session_id: m.dated for m in near.alone}
    assert dated["meant"] is True and dated["other"] is False and dated["told"] is True

    searcher = _Asked(store.search)
    hits = rank_messages(searcher, "default", question, semantic=index)  # type: ignore[arg-type]
    order = [h.session_id for h in hits]
    assert order.index("told") < order.index("later")
    assert order.index("meant") < order.index("other")  # found by meaning, says when
    words_only = {m.message_id for m in store.search.match_messages("default", ["race"])}
    assert searcher.asked and set(searcher.asked) <= words_only
