"""The neighbouring-turn index (migration 3) and the ranking on top of it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.recall.ranking import DEFAULT_CONFIG, query_terms, rank_messages
from hermes.recall.search import search_hits
from hermes.store.base import NewMessage
from hermes.store.migrations import MIGRATIONS
from hermes.store.sqlite import SQLiteStore
from tests.store_edits import delete_message, edit_message


@pytest.fixture
def store(tmp_path: Path):
    s = SQLiteStore(tmp_path / "state.db")
    yield s
    s.close()


def check(store: SQLiteStore) -> None:
    """FTS5 verifies its index against the content (raises if the triggers drifted)."""
    health = store.search.check_search_index()
    assert health.ok, health.detail


def windows(store: SQLiteStore, session: str) -> list[tuple[str, str, str]]:
    """The session's rows in the windows view once the index has caught up (the view only
    shows what the index holds)."""
    store.search.catch_up()
    return store.connection.execute(
        "SELECT before, body, after FROM message_windows WHERE session_id = ? ORDER BY id",
        (session,),
    ).fetchall()


def add(
    store: SQLiteStore,
    scope: str,
    session: str,
    *pairs: tuple[str, str | None],
    ts: float | None = None,
) -> list:
    store.ensure_session(scope, session, source="cli")
    return store.append_messages(scope, session, [NewMessage(r, c, timestamp=ts) for r, c in pairs])


def test_windows_follow_inserts_updates_and_deletes(store: SQLiteStore) -> None:
    recs = add(
        store,
        "default",
        "s",
        ("user", "one"),
        ("assistant", None),
        ("tool", "tool out"),
        ("assistant", "two"),
    )
    assert windows(store, "s") == [("", "one", "two"), ("one", "two", "")]
    recs += add(store, "default", "s", ("user", "three"))
    assert windows(store, "s")[-2:] == [("one", "two", "three"), ("two", "three", "")]
    check(store)
    edit_message(store, "default", recs[3].id, "TWO")
    edit_message(store, "default", recs[1].id, "now it speaks")  # joins the windows
    assert windows(store, "s") == [
        ("", "one", "now it speaks"),
        ("one", "now it speaks", "TWO"),
        ("now it speaks", "TWO", "three"),
        ("TWO", "three", ""),
    ]
    check(store)
    delete_message(store, "default", recs[3].id)
    assert windows(store, "s")[-1] == ("now it speaks", "three", "")
    check(store)
    add(store, "default", "other", ("user", "kept"))
    assert store.delete_session("default", "s")
    check(store)
    assert windows(store, "s") == [] and windows(store, "other") == [("", "kept", "")]
    add(store, "user:x", "s", ("user", "x says hi"), ("assistant", "hello x"))
    store.delete_scope("user:x")
    check(store)
    assert rank_messages(store.search, "user:x", "hello") == []


def test_migration_indexes_existing_messages(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = SQLiteStore(path, migrations=[m for m in MIGRATIONS if m.version <= 2])
    old.connection.execute(
        "INSERT INTO sessions (scope, id, source, started_at, updated_at, "
        "message_count) VALUES ('default', 's', 'cli', 1, 1, 2)"
    )
    for idx, (role, text) in enumerate(
        (("user", "we adopted a beagle"), ("assistant", "what a lovely dog"))
    ):
        old.connection.execute(
            "INSERT INTO messages (scope, session_id, idx, role, content, "
            "timestamp) VALUES ('default', 's', ?, ?, ?, 1)",
            (idx, role, text),
        )
    old.close()
    new = SQLiteStore(path)
    try:
        check(new)
        hits = rank_messages(new.search, "default", "beagle")
        assert [(h.session_id, h.index) for h in hits][:1] == [("s", 0)]
    finally:
        new.close()


def test_query_terms_drop_question_words_and_keep_content() -> None:
    assert query_terms("What is the name of my dog?") == ["name", "dog"]
    assert query_terms("what is it") == ["what", "is", "it"]  # all stopwords: keep them
    assert query_terms("!!! ???") == []


def test_stemming_and_neighbouring_turns_find_spread_evidence(store: SQLiteStore) -> None:
    add(
        store,
        "default",
        "pets",
        ("user", "Big news at home: a new family member arrived on Saturday!"),
        ("assistant", "Congratulations! What did you decide to call your new dog?"),
        ("user", "Biscuit. The kids picked it after a long debate."),
        ("assistant", "Lovely choice."),
    )
    for i in range(30):
        add(
            store,
            "default",
            f"filler{i}",
            ("user", f"How do I cook rice number {i}?"),
            ("assistant", "Rinse it first and use less water than you think."),
        )
    add(store, "default", "noise", ("user", "My friend has a dog."), ("assistant", "Nice."))
    hits = rank_messages(store.search, "default", "What was the dog called?", limit=5)
    found = [(h.session_id, h.index) for h in hits]
    assert ("pets", 2) in found  # the answer holds no query word; its neighbour does
    plain = [
        (h.session_id, h.index)
        for h in store.search.match_messages("default", ["dog", "called"], view="message", limit=10)
    ]
    assert ("pets", 2) not in plain  # single-message search cannot see it
    stemmed = rank_messages(store.search, "default", "decided calling dogs")
    assert (stemmed[0].session_id, stemmed[0].index) == ("pets", 1)


def test_role_prior_and_recency_tie_break(store: SQLiteStore) -> None:
    add(
        store,
        "default",
        "a",
        ("user", "Any podcast for my commute?"),
        ("assistant", "Try the podcast Radiolab for your commute."),
        ts=1_000,
    )
    hits = rank_messages(store.search, "default", "which podcast did you recommend for the commute")
    assert hits[0].role == "assistant"
    hits = rank_messages(store.search, "default", "which podcast did I want for my commute")
    assert hits[0].role == "user"
    add(store, "default", "old", ("user", "I live in Denver now."), ts=2_000)
    add(store, "default", "new", ("user", "I live in Austin now."), ts=3_000)
    assert rank_messages(store.search, "default", "live now")[0].session_id == "new"


def test_search_is_confined_to_its_scope_and_skips_excluded_sessions(store: SQLiteStore) -> None:
    add(store, "user:alice", "s1", ("user", "my locker code is 4512 zebra"))
    add(store, "user:alice", "live", ("user", "zebra again in the live chat"))
    add(store, "user:bob", "s1", ("user", "bob has no zebra"))
    hits = search_hits(store, "user:alice", "zebra", exclude=["live"])
    assert [(h.session_id, h.message_index) for h in hits] == [("s1", 0)]
    assert "[zebra]" in hits[0].snippet
    assert [h.session_id for h in search_hits(store, "user:bob", "locker code zebra")] == ["s1"]
    assert "4512" not in search_hits(store, "user:bob", "locker code zebra")[0].snippet
    assert search_hits(store, "user:carol", "zebra") == []
    assert search_hits(store, "default", "zebra") == []


@pytest.mark.parametrize("query", ['" OR tag : x', "NEAR(a b)", "col:thing*", "^start", "-x AND"])
def test_fts_syntax_in_queries_is_harmless(store: SQLiteStore, query: str) -> None:
    add(store, "default", "s", ("user", "start col thing tag near"))
    rank_messages(store.search, "default", query)  # no sqlite error


def test_a_busy_live_session_does_not_hide_older_hits(store: SQLiteStore) -> None:
    add(store, "default", "live", *[("user", f"kiwi talk {i}") for i in range(300)])
    add(store, "default", "old", ("user", "the kiwi orchard visit " + "and so on " * 20), ts=1.0)
    add(store, "default", "other", *[("user", f"plain chat {i}") for i in range(700)])
    hits = search_hits(store, "default", "kiwi", exclude=["live"])
    assert [(h.session_id, h.message_index) for h in hits] == [("old", 0)]


def test_a_question_naming_a_speaker_favours_that_speakers_turns(store: SQLiteStore) -> None:
    store.ensure_session("default", "c1", source="import")
    store.append_messages(
        "default",
        "c1",
        [
            NewMessage("assistant", "Hey Caroline, how was the pottery class?", name="Melanie"),
            NewMessage("user", "It was fine. I also started a pottery course.", name="Caroline"),
            NewMessage("assistant", "I tried a pottery course last year too.", name="Melanie"),
        ],
    )
    hits = rank_messages(store.search, "default", "What course did Caroline start?", limit=3)
    assert (hits[0].session_id, hits[0].index) == ("c1", 1)
    assert [m.name for m in store.get_messages("default", "c1")] == [
        "Melanie",
        "Caroline",
        "Melanie",
    ]
    check(store)


def test_a_question_naming_two_speakers_favours_its_subjects_turns(
    store: SQLiteStore,
) -> None:
    """ "What does Ann think about Bob's move?": Ann's view answers it, though Bob's own turn
    about his move shares more of its words; the first name is the subject."""
    store.ensure_session("default", "c1", source="import")
    store.append_messages(
        "default",
        "c1",
        [
            NewMessage("user", "Bob: I decided to move to Lisbon, the move is in May.", name="Bob"),
            NewMessage("assistant", "Ann: Brave! I think it will be great for you.", name="Ann"),
            NewMessage("user", "Bob: Thanks! The move still scares me a bit.", name="Bob"),
        ],
    )
    question = "What does Ann think about Bob's move?"
    hits = rank_messages(store.search, "default", question, limit=3)
    assert (hits[0].session_id, hits[0].index) == ("c1", 1)
    every = replace(DEFAULT_CONFIG, first_named=False)  # both named speakers boosted
    hits = rank_messages(store.search, "default", question, limit=3, config=every)
    assert (hits[0].session_id, hits[0].index) != ("c1", 1)


def test_a_question_asking_when_favours_the_turn_that_says_when(store: SQLiteStore) -> None:
    """ "When did I run the charity race?" is answered by the turn that places the race in
    time, not by a later mention of it, which recency would otherwise put first."""
    add(store, "default", "told", ("user", "I ran a charity race last Saturday."), ts=1_000.0)
    add(store, "default", "later", ("user", "The charity race photos are online."), ts=9_000.0)
    question = "When did I run the charity race?"
    hits = rank_messages(store.search, "default", question)
    assert hits[0].session_id == "told"
    off = replace(DEFAULT_CONFIG, when=0.0)
    assert rank_messages(store.search, "default", question, config=off)[0].session_id == "later"
    # a question not asking when is left as it was
    what = "What about the charity race?"
    assert [h.session_id for h in rank_messages(store.search, "default", what)] == [
        h.session_id for h in rank_messages(store.search, "default", what, config=off)
    ]


def test_import_and_export_keep_speaker_names(store: SQLiteStore) -> None:
    from hermes.store.transfer import export_sessions, import_sessions, parse_jsonl

    line = (
        '{"id": "d1", "messages": [{"role": "user", "name": "Jon", "content": "I opened a '
        'dance studio"}, {"role": "assistant", "name": "Gina", "content": "Congrats!"}]}'
    )
    import_sessions(store, "default", parse_jsonl([line]))
    exported = next(export_sessions(store, "default"))
    assert '"name": "Jon"' in exported and '"name": "Gina"' in exported
    hits = rank_messages(store.search, "default", "What did Jon open?")
    assert (hits[0].session_id, hits[0].index) == ("d1", 0)


def test_a_transcript_naming_speakers_inline_gets_its_names(store: SQLiteStore) -> None:
    import json

    from hermes.store.transfer import import_sessions, parse_jsonl

    def session(sid: str, texts: list[str]) -> str:
        turns = [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]
        return json.dumps({"id": sid, "messages": turns})

    lines = [
        session("t1", ["Jon: I opened a dance studio", "Gina: Congrats!", "Jon: Thanks, Gina"]),
        # a few lines that open with a label are not a transcript
        session("n1", ["Note: buy milk", "Sure, noted.", "Also the bread", "Will do."]),
    ]
    import_sessions(store, "default", parse_jsonl(lines))
    assert [m.name for m in store.get_messages("default", "t1")] == ["Jon", "Gina", "Jon"]
    assert store.get_messages("default", "t1")[0].content == "Jon: I opened a dance studio"
    assert [m.name for m in store.get_messages("default", "n1")] == [None] * 4
    hits = rank_messages(store.search, "default", "What did Jon open?")
    assert (hits[0].session_id, hits[0].index) == ("t1", 0)


def test_bulk_import_indexes_like_appending_and_later_turns_are_indexed(
    store: SQLiteStore,
) -> None:
    from hermes.store.base import NewSession

    turns = [("user", "one"), ("assistant", None), ("tool", "out"), ("assistant", "two")]
    add(store, "default", "appended", *turns)
    new = [NewSession("bulk", "import", [NewMessage(r, c, name="Ann") for r, c in turns])]
    assert store.import_sessions("default", new) == ["bulk"]
    assert store.import_sessions("default", new) == []  # already there: skipped
    assert (
        windows(store, "bulk")
        == windows(store, "appended")
        == [
            ("", "one", "two"),
            ("one", "two", ""),
        ]
    )
    check(store)
    add(store, "default", "bulk", ("user", "three"))  # waits, then caught up like any turn
    assert windows(store, "bulk")[-2:] == [("one", "two", "three"), ("two", "three", "")]
    check(store)
    record = store.get_session("default", "bulk")
    assert record is not None and record.message_count == 5 and record.user_turns == 2


def test_a_repeated_message_is_shown_once_before_other_hits(store: SQLiteStore) -> None:
    for day in range(6):  # the same request, sent every morning
        add(store, "default", f"day{day}", ("user", "Kiwi harvest report please"), ts=10.0 + day)
    add(store, "default", "talk", ("user", "The kiwi harvest went badly this year"), ts=1.0)
    hits = rank_messages(store.search, "default", "kiwi harvest report", limit=3)
    assert [h.session_id for h in hits][1] == "talk"
    assert len(rank_messages(store.search, "default", "kiwi harvest report", limit=10)) == 7
    assert [
        h.session_id
        for h in rank_messages(
            store.search,
            "default",
            "kiwi harvest report",
            limit=3,
            config=replace(DEFAULT_CONFIG, repeats=0),
        )
    ] == ["day5", "day4", "day3"]


def test_cron_runs_rank_below_conversations(store: SQLiteStore) -> None:
    store.ensure_session("default", "cron_daily", source="cron")
    store.append_messages(
        "default", "cron_daily", [NewMessage("assistant", "Daily digest: the kiwi harvest report")]
    )
    add(store, "default", "chat", ("user", "We talked about the kiwi harvest once, long ago"))
    hits = rank_messages(store.search, "default", "kiwi harvest report")
    assert [h.session_id for h in hits] == ["chat", "cron_daily"]


def test_a_question_naming_a_time_favours_turns_from_then(store: SQLiteStore) -> None:
    from datetime import UTC, datetime

    from hermes.recall.query import named_period

    for sid, when in (
        ("april", datetime(2023, 4, 20, tzinfo=UTC)),
        ("may", datetime(2023, 5, 8, tzinfo=UTC)),
    ):
        store.ensure_session("default", sid, source="import", started_at=when.timestamp())
        store.append_messages(
            "default",
            sid,
            [NewMessage("user", "We went hiking in the hills", timestamp=when.timestamp())],
        )
    for question, first in (
        ("Where did we go hiking in May 2023?", "may"),
        ("Where did we go hiking on 20 April 2023?", "april"),
        ("hiking, April 20th, 2023", "april"),
    ):
        assert rank_messages(store.search, "default", question, limit=2)[0].session_id == first
    # the newer one wins a tie when no time is named
    assert rank_messages(store.search, "default", "Where did we go hiking?")[0].session_id == "may"
    assert named_period("in 2022") == (
        datetime(2022, 1, 1, tzinfo=UTC).timestamp(),
        datetime(2023, 1, 1, tzinfo=UTC).timestamp(),
    )
    assert named_period("what happened in May") is None  # which May: needs a year
    assert named_period("on 31 February 2023") is None


def test_the_semantic_question_has_its_speakers_as_pronouns() -> None:
    from hermes.recall.ranking import without_names

    speakers = {"audrey", "jon"}
    assert without_names("When did Audrey get hurt?", speakers) == "When did they get hurt?"
    assert without_names("Name of Jon's cat?", speakers) == "Name of their cat?"
    assert without_names("What did Paris say?", speakers) == "What did Paris say?"
    assert without_names("Where does Audrey work?", set()) == "Where does Audrey work?"


def test_a_question_of_common_words_ranks_the_rows_holding_all_of_them(
    store: SQLiteStore,
) -> None:
    """ "sam" and "concert" are each in more rows than COMMON_ROWS: the few rows holding both
    are ranked without FTS5's bm25(), whose document frequencies walk both doclists."""
    from hermes.store.base import NewSession
    from hermes.store.search_index import COMMON_ROWS

    common = COMMON_ROWS // 2 + 10  # sessions of two turns: each word in 2 * common rows
    sessions = [
        NewSession(f"bike{i}", "import", [NewMessage("user", "Sam fixed the bike"), NewMessage("assistant", "Nice one")])
        for i in range(common)
    ] + [
        NewSession(f"gig{i}", "import", [NewMessage("user", "The concert sold out"), NewMessage("assistant", "Shame")])
        for i in range(common)
    ]  # fmt: skip
    sessions += [
        NewSession(f"echo{i}", "import", [NewMessage("user", "Sam: concerts!")]) for i in range(4)
    ]
    sessions += [
        NewSession("both", "import", [NewMessage("user", "Sam loved the concert")]),
        NewSession("split", "import", [NewMessage("user", "Sam called"), NewMessage("assistant", "About the concert")]),
        NewSession("long", "import", [NewMessage("user", "Sam wrote at length about the weather, the trains, the garden, the neighbours, and at the very end the concert")]),
        NewSession("live", "import", [NewMessage("user", "Sam concert")]),
    ]  # fmt: skip
    store.import_sessions("default", sessions)
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    hits = store.search.match_messages(
        "default", ["sam", "concert"], view="window", limit=8, exclude_sessions=["live"]
    )
    store.connection.set_trace_callback(None)
    assert not [s for s in statements if "bm25(" in s]
    # the newest copy of a repeated text first, its other copies after every other row
    assert [h.session_id for h in hits] == [
        "echo3", "both", "split", "split", "long", "echo2", "echo1", "echo0",
    ]  # fmt: skip
    assert [h.score for h in hits[:5]] == sorted((h.score for h in hits[:5]), reverse=True)


def test_row_scores_count_forms_of_a_word_as_the_stemmed_index_does() -> None:
    from hermes.store.row_scores import form_pattern

    said = "Concerts, going, danced, studied, painter, pain, good, concertina"
    found = {t: form_pattern(t).findall(said.lower()) for t in ("concert", "go", "dance", "study", "paint")}  # fmt: skip
    assert found == {
        "concert": ["concerts"],
        "go": ["going"],
        "dance": ["danced"],
        "study": ["studied"],
        "paint": ["painter"],
    }


_WORDISH = st.text(alphabet="workgpaintdé_ \n,'-", max_size=40)


@given(
    rows=st.lists(st.tuples(_WORDISH, st.sampled_from(["", "jon", "work"])), max_size=6),
    terms=st.lists(st.sampled_from(["work", "go", "paint", "jon", "é"]), min_size=1, max_size=3),
)
def test_row_scores_score_each_row_as_scoring_it_alone_would(rows, terms) -> None:
    """All rows are scanned at once (one pass per word over their joined texts): each
    row's score must be what counting the forms in that row alone gives."""
    from hermes.store.row_scores import K1, B, Weights, bm25_rows, form_pattern

    weights = Weights()
    lengths = [len(text.split()) for text, _ in rows]
    average = max(sum(lengths) / len(lengths), 1.0) if rows else 1.0
    alone = []
    for (text, speaker), length in zip(rows, lengths, strict=True):
        norm = K1 * (1 - B + B * length / average)
        score = 0.0
        for term in terms:
            count = weights.body * len(form_pattern(term).findall(text))
            count += weights.speaker if term in speaker.split() else 0.0
            count = count or weights.elsewhere
            score += count * (K1 + 1) / (count + norm)
        alone.append(score)
    assert bm25_rows(rows, terms, weights) == alone


def test_a_question_about_now_favours_the_newer_statement(store: SQLiteStore) -> None:
    add(store, "default", "old", ("user", "I work at the bakery downtown."), ts=1_000.0)
    add(store, "default", "mid", ("user", "Weather chat, nothing about jobs."), ts=2_000.0)
    newer = "Big change: these days I work at the city museum, a long commute but worth it."
    add(store, "default", "new", ("user", newer), ts=3_000.0)
    assert [h.session_id for h in rank_messages(store.search, "default", "Where do I work?")] == [
        "old",
        "new",
    ]
    for asked in ("Where do I work now?", "Where do I currently work?", "Do I still work?"):
        assert rank_messages(store.search, "default", asked)[0].session_id == "new", asked


def test_a_turn_that_only_asks_ranks_below_one_that_tells(store: SQLiteStore) -> None:
    add(store, "default", "asked", ("user", "Should I move to Denver or Austin?"), ts=2_000.0)
    add(store, "default", "told", ("user", "I moved to Denver in May, finally unpacked."), ts=1.0)
    assert [h.session_id for h in rank_messages(store.search, "default", "Where did I move?")] == [
        "told",
        "asked",
    ]
    plain = replace(DEFAULT_CONFIG, question=1.0)
    hits = rank_messages(store.search, "default", "Where did I move?", config=plain)
    assert hits[0].session_id == "asked"  # by words alone the question matches better


def test_the_reply_to_a_follow_up_question_comes_with_its_hit(store: SQLiteStore) -> None:
    """The teaser matches the question's words; the answer is in the reply to the friend's
    follow-up question, which shares no word with it."""
    add(
        store,
        "default",
        "chat",
        ("user", "I stayed up two nights in a row because of a novel."),
        ("assistant", "Which one hooked you like that?"),
        ("user", "'Circe'. I could not put it down."),
        ("assistant", "Sounds great, enjoy the rest of your week."),
    )
    add(
        store,
        "default",
        "told",  # the friend's turn after the hit asks nothing: no reply joins
        ("user", "The library has a novel section now."),
        ("assistant", "Oh nice, I love that branch."),
        ("user", "The one by the station, open late on Fridays."),
    )
    deeper = replace(DEFAULT_CONFIG, replies=3)  # the hit ranks second ("told" is newer)
    hits = [
        (h.session_id, h.index)
        for h in rank_messages(store.search, "default", "Which novel kept me up?", config=deeper)
    ]
    assert ("chat", 2) in hits[:3]
    assert hits.index(("chat", 2)) == hits.index(("chat", 0)) + 1  # just below its hit
    assert ("told", 2) not in hits
    off = replace(DEFAULT_CONFIG, replies=0)
    hits = [
        (h.session_id, h.index)
        for h in rank_messages(store.search, "default", "Which novel kept me up?", config=off)
    ]
    assert ("chat", 2) not in hits


def test_a_follow_up_that_tells_and_then_asks_brings_its_reply(store: SQLiteStore) -> None:
    """Real friends rarely only ask: "Wow, that looks great! How long have you been
    painting?" The answer ("Seven years now") shares no word with the question asked of
    the past; the turn ending with a question is enough for the reply to join its hit
    (the rule before wanted a turn that only asks)."""
    add(
        store,
        "default",
        "chat",
        ("user", "Here is the painting I finished, a lake at sunrise."),
        ("assistant", "Wow, that looks great! Since when do you do this?"),
        ("user", "Seven years now, ever since college."),
        ("assistant", "Amazing, keep going."),
    )
    add(store, "default", "other", ("user", "Nice weather for a walk today."))
    question = "How long has she been painting?"
    hits = [(h.session_id, h.index) for h in rank_messages(store.search, "default", question)]
    assert hits.index(("chat", 2)) == hits.index(("chat", 0)) + 1
    off = replace(DEFAULT_CONFIG, replies=0)
    hits = [
        (h.session_id, h.index)
        for h in rank_messages(store.search, "default", question, config=off)
    ]
    assert ("chat", 2) not in hits
