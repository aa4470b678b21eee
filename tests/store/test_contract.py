"""The Store contract, run against each backend (a SQLite file and a real PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from hermes.store import Lease, NewMessage, NewSession, Store, StoreError, open_store
from hermes.store.base import UsageRecord
from tests.recall_helpers import described as describe
from tests.store_edits import take_lease


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = open_store(store_url)
    yield s
    s.close()


def _other(store: Store, store_url: str) -> Store:
    """A second handle on the same database, as another process (replica) would have."""
    return open_store(store_url)


def test_sessions_and_messages_round_trip(store: Store) -> None:
    s = store.ensure_session("default", "chat-1", source="api", title="first")
    assert (s.scope, s.id, s.source, s.title, s.message_count) == (
        "default",
        "chat-1",
        "api",
        "first",
        0,
    )
    calls = [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]
    records = store.append_messages(
        "default",
        "chat-1",
        [
            NewMessage("user", "hello there", name="ann"),
            NewMessage("assistant", None, tool_calls=calls),
            NewMessage("tool", "3", tool_call_id="c1", tool_name="add"),
            NewMessage("assistant", "the answer is 3"),
        ],
        prompt_tokens=10,
        completion_tokens=4,
        last_prompt_tokens=10,
        system_prompt="be brief",
    )
    assert [r.index for r in records] == [0, 1, 2, 3]
    got = store.get_messages("default", "chat-1")
    assert [(m.role, m.content, m.name) for m in got][0] == ("user", "hello there", "ann")
    assert got[1].tool_calls == calls and got[2].tool_call_id == "c1"
    assert [m.id for m in got] == [r.id for r in records]
    assert [m.index for m in store.get_messages("default", "chat-1", start=1, end=3)] == [1, 2]
    session = store.get_session("default", "chat-1")
    assert session is not None
    assert (session.message_count, session.user_turns, session.input_tokens) == (4, 1, 10)
    assert session.system_prompt == "be brief"
    store.set_system_prompt("default", "chat-1", "changed")
    assert store.get_session("default", "chat-1").system_prompt == "changed"  # type: ignore[union-attr]
    assert store.count_messages() == 4 and store.count_messages("user:x") == 0
    assert [x.id for x in store.list_sessions("default")] == ["chat-1"]
    assert store.get_session("user:x", "chat-1") is None  # scopes never see each other


def test_append_requires_a_session_and_is_all_or_nothing(store: Store) -> None:
    with pytest.raises(StoreError):
        store.append_messages("default", "missing", [NewMessage("user", "x")])
    store.ensure_session("default", "s", source="cli")
    with pytest.raises(Exception):  # noqa: B017 - each backend names its constraint error
        store.append_messages("default", "s", [NewMessage("user", "ok"), NewMessage(None, "x")])  # type: ignore[arg-type]
    assert store.get_messages("default", "s") == []
    assert store.get_session("default", "s").message_count == 0  # type: ignore[union-attr]


def test_concurrent_appends_from_several_handles_keep_every_message_in_order(
    store: Store, store_url: str
) -> None:
    handles = [store, *(_other(store, store_url) for _ in range(3))]
    store.ensure_session("default", "s", source="cli")

    def writer(s: Store, n: int) -> None:
        for i in range(25):
            s.append_messages("default", "s", [NewMessage("user", f"w{n}-{i}")])

    threads = [threading.Thread(target=writer, args=(s, n)) for n, s in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    messages = store.get_messages("default", "s")
    assert [m.index for m in messages] == list(range(100))
    for n in range(4):  # each writer's messages in its own order
        mine = [m.content for m in messages if (m.content or "").startswith(f"w{n}-")]
        assert mine == [f"w{n}-{i}" for i in range(25)]
    for h in handles[1:]:
        h.close()


def test_leases_are_exclusive_until_released_or_expired(store: Store, store_url: str) -> None:
    other = _other(store, store_url)
    x = "session:default:x"
    try:
        assert take_lease(store, x, "a", 60)
        assert not take_lease(other, x, "b", 60)
        assert take_lease(store, x, "a", 60)  # the holder takes it again
        assert store.renew_lock(x, "a", 60) and not other.renew_lock(x, "b", 60)
        store.release_lock(x, "a")
        assert take_lease(other, x, "b", 0.0)
        assert take_lease(store, x, "a", 60)  # b's lease had already expired
        lease = Lease("session:default:t", "me")
        assert store.begin_turn("default", "t", source="api", lease=lease, ttl_seconds=60)
        busy = Lease("session:default:t", "them")
        assert other.begin_turn("default", "t", source="api", lease=busy, ttl_seconds=60) is None
        store.append_messages("default", "t", [NewMessage("user", "hi")], release=lease)
        assert other.begin_turn("default", "t", source="api", lease=busy, ttl_seconds=60)
    finally:
        other.close()


def test_compactions_and_learned_windows(store: Store) -> None:
    store.ensure_session("default", "s", source="cli")
    assert store.latest_compaction("default", "s") is None
    first = store.add_compaction("default", "s", head_end=2, upto_idx=10, summary="abc", kind="a")
    second = store.add_compaction("default", "s", head_end=2, upto_idx=20, summary="de", kind="b")
    assert (first.seq, second.seq) == (1, 2)
    assert store.latest_compaction("default", "s") == second
    markers = store.compression_markers("default", "s")
    assert [(m["seq"], m["upto_index"], m["summary_chars"]) for m in markers] == [
        (1, 10, 3),
        (2, 20, 2),
    ]
    assert store.get_model_limit("m") is None
    store.set_model_limit("m", 8000)
    store.set_model_limit("m", 16000)  # never raised
    assert store.get_model_limit("m") == 8000


def test_search_views_stay_in_scope_stem_and_snippet(store: Store) -> None:
    for scope in ("default", "user:bob"):
        store.ensure_session(scope, "chat-1", source="api")
        store.append_messages(
            scope,
            "chat-1",
            [
                NewMessage("user", f"{scope} is running marathons"),
                NewMessage("assistant", "Biscuit is a lovely name for a dog"),
            ],
        )
    hits = store.search.match_messages("user:bob", ["run", "marathon"], view="message")
    assert [(h.session_id, h.role, h.source) for h in hits] == [("chat-1", "user", "api")]
    assert store.search.match_messages("user:bob", ["run"], view="exact") == []  # forms as written
    assert len(store.search.match_messages("user:bob", ["running"], view="exact")) == 1
    # the window finds the reply through its neighbour's words, ranked below the message
    window = store.search.match_messages("user:bob", ["marathons"], view="window")
    assert [h.role for h in window] == ["user", "assistant"]
    assert window[0].score > window[1].score
    snippets = store.search.message_snippets("user:bob", ["marathon"], [hits[0].message_id])
    assert "[marathons]" in snippets[hits[0].message_id]
    assert store.search.match_messages("user:carol", ["marathon"]) == []
    assert store.search.message_snippets("user:carol", ["marathon"], [hits[0].message_id]) == {}
    assert store.search.match_messages("user:bob", ["marathon"], exclude_sessions=["chat-1"]) == []
    assert store.search.check_search_index().ok
    assert store.search.rebuild_search_index() == 4


def test_matches_say_which_messages_repeat_a_text(store: Store) -> None:
    """Every backend keys a match by its text, so a ranking can show a repeat once."""
    for session in ("mon", "tue"):
        store.ensure_session("default", session, source="cli")
        store.append_messages(
            "default",
            session,
            [NewMessage("user", "Summarise my kiwi orders"), NewMessage("user", f"kiwi {session}")],
        )
    for view in ("message", "exact", "window"):
        hits = store.search.match_messages("default", ["kiwi"], view=view, limit=10)
        keys = {h.session_id + str(h.index): h.text_key for h in hits}
        assert len(keys) == 4 and all(keys.values()), view
        assert keys["mon0"] == keys["tue0"] != keys["mon1"] != keys["tue1"], view
    described = describe(store, "default", [h.message_id for h in hits])
    assert {d.text_key for d in described} == set(keys.values())


def test_cjk_is_found_through_trigrams_and_stays_in_scope(store: Store) -> None:
    store.ensure_session("default", "zh", source="cli")
    store.ensure_session("user:b", "zh", source="cli")
    store.append_messages("default", "zh", [NewMessage("user", "我喜欢在周末去北京旅游")])
    store.append_messages("user:b", "zh", [NewMessage("user", "北京旅游")])
    hits = store.search.match_messages("default", ["北京旅"], view="trigram")
    assert [h.session_id for h in hits] == ["zh"] and len(hits) == 1
    assert store.search.match_messages("default", ["北京"], view="trigram") == []  # < 3 characters


def test_deleting_sessions_and_scopes_takes_their_messages(store: Store) -> None:
    for sid in ("a", "b"):
        store.ensure_session("user:z", sid, source="cli")
        store.append_messages("user:z", sid, [NewMessage("user", "zebra crossing")])
    store.add_compaction("user:z", "a", head_end=0, upto_idx=1, summary="s", kind="k")
    assert store.delete_session("user:z", "a") and not store.delete_session("user:z", "a")
    assert [h.session_id for h in store.search.match_messages("user:z", ["zebra"])] == ["b"]
    assert store.delete_scope("user:z") == 1
    assert store.count_messages() == 0


def test_schema_status_and_health(store: Store) -> None:
    status = store.schema_status()
    assert status.pending == [] and status.version >= 1
    assert store.migrate() == []
    assert store.health()["ok"]


def test_bulk_import_skips_known_ids_and_indexes_everything(store: Store) -> None:
    from hermes.store import NewSession

    store.ensure_session("default", "old", source="cli")
    sessions = [
        NewSession("old", "import", [NewMessage("user", "never stored")]),
        NewSession(
            "a",
            "import",
            [
                NewMessage("user", "we adopted a puppy", timestamp=10.0),
                NewMessage("assistant", "Biscuit is a lovely name"),
            ],
            title="pets",
        ),
        NewSession("a", "import", [NewMessage("user", "a repeated id")]),
        NewSession("b", "import", [NewMessage("user", "北京旅游很好玩")]),
    ]
    assert store.import_sessions("default", sessions) == ["a", "b"]
    assert store.import_sessions("default", sessions) == []
    a = store.get_session("default", "a")
    assert a is not None and (a.message_count, a.user_turns, a.title, a.started_at) == (
        2,
        1,
        "pets",
        10.0,
    )
    assert [m.index for m in store.get_messages("default", "a")] == [0, 1]
    hits = store.search.match_messages("default", ["puppy"], view="window")
    assert [h.index for h in hits] == [0, 1]  # the reply is found through its neighbour
    assert [
        h.session_id for h in store.search.match_messages("default", ["北京旅"], view="trigram")
    ] == ["b"]
    assert store.search.check_search_index().ok


def test_hidden_ranges_leave_the_prompt_but_not_the_store(store: Store) -> None:
    store.ensure_session("default", "u", source="cli")
    store.append_messages("default", "u", [NewMessage("user", "a"), NewMessage("assistant", "b")])
    assert store.hidden_ranges("default", "u") == []
    store.hide_messages("default", "u", start=0, end=2)
    store.hide_messages("default", "u", start=0, end=1)  # never shrinks a hidden range
    assert store.hidden_ranges("default", "u") == [(0, 2)]
    assert store.hidden_ranges("other", "u") == []
    lease = Lease("session:default:u", "me")
    held = store.begin_turn("default", "u", source="cli", lease=lease, ttl_seconds=60)
    assert held is not None and held.hidden == [(0, 2)]  # read with the row: no second read
    assert held == store.get_session("default", "u")
    store.release_lock(lease.name, lease.holder)
    assert [m.content for m in store.get_messages("default", "u")] == ["a", "b"]
    with pytest.raises(StoreError, match="not a range"):
        store.hide_messages("default", "u", start=2, end=2)
    store.delete_session("default", "u")
    assert store.hidden_ranges("default", "u") == []


def test_scoped_keys_are_kept_hashed_and_revoked(store: Store) -> None:
    from hermes.auth.keys import create_key, hash_secret, list_keys, revoke, verify

    token, record = create_key(store, "alice", label="laptop")
    _, expired = create_key(store, "bob", expires_in=-1)
    found = verify(store, token)
    assert found is not None and (found.id, found.user, found.label) == (
        record.id,
        "alice",
        "laptop",
    )
    assert verify(store, token[:-2] + "xx") is None
    assert [k.id for k in list_keys(store)] == [record.id, expired.id]
    exported = dict((r.id, h) for r, h in store.export_api_keys())  # type: ignore[attr-defined]
    assert exported[record.id] == hash_secret(token) and token not in exported.values()
    assert revoke(store, record.id) and not revoke(store, record.id)
    assert verify(store, token) is None
    assert list_keys(store)[0].revoked_at is not None


def test_matches_say_which_messages_only_ask(store: Store) -> None:
    said = [
        ("user", "Ooh, which concert?"),
        ("assistant", "Back from the concert! Have you been?"),
        ("user", "The concert was loud."),
        ("assistant", "Which concert was it?\n"),
        ("user", "concert 在哪里？"),
        ("assistant", "concert 很好。你去了吗？"),
    ]
    store.ensure_session("default", "s", source="api")
    store.append_messages("default", "s", [NewMessage(r, c) for r, c in said])
    found = store.search.match_messages("default", ["concert"], view="message", limit=10)
    asks = {0: True, 1: False, 2: False, 3: True, 4: True, 5: False}
    assert {m.index: m.asks for m in found} == asks
    described = describe(store, "default", [m.message_id for m in found])
    assert [m.asks for m in described] == list(asks.values())
    # ... and which end by asking something back (a question after what they tell)
    back = {0: True, 1: True, 2: False, 3: True, 4: True, 5: True}
    assert {m.index: m.asks_back for m in found} == back
    assert [m.asks_back for m in described] == list(back.values())


@pytest.mark.parametrize(
    ("text", "dated"),
    [
        ("I ran a charity race last Saturday.", True),
        ("Two weeks ago the concert was loud.", True),
        ("We met on the 15th, after the concert.", True),
        ("The concert in June was loud.", True),
        ("YESTERDAY the concert was loud.", True),
        ("The concert was loud; I may go again.", False),
        ("The concert lasted forever.", False),  # "last" only as a whole word
        ("The concert had 15 bands.", False),
    ],
)
def test_the_search_says_which_messages_tell_when(store: Store, text: str, dated: bool) -> None:
    """Both backends read a message's time words alike (Python and a PostgreSQL regex),
    and only in the scope asked about."""
    store.ensure_session("default", "s", source="api")
    (record,) = store.append_messages("default", "s", [NewMessage("user", text)])
    mid = record.id
    assert store.search.tells_when("default", [mid]) == ({mid} if dated else set())
    assert store.search.tells_when("other", [mid]) == set()
    assert store.search.tells_when("default", []) == set()


def test_messages_at_places_finds_conversational_turns_of_its_scope(store: Store) -> None:
    store.ensure_session("default", "s", source="api")
    store.append_messages(
        "default",
        "s",
        [
            NewMessage("user", "I read a novel all night.", name="Ann"),
            NewMessage("assistant", "Which one?"),
            NewMessage("assistant", None, tool_calls=[{"id": "c", "type": "function"}]),
            NewMessage("tool", "done", tool_call_id="c", tool_name="t"),
            NewMessage("user", "Circe."),
        ],
    )
    store.ensure_session("other", "s", source="api")
    store.append_messages("other", "s", [NewMessage("user", "not yours")])
    found = store.search.messages_at(
        "default", [("s", 4), ("s", 0), ("s", 1), ("s", 2), ("s", 3), ("s", 9), ("x", 0)]
    )
    assert [(m.index, m.role, m.speaker, m.asks) for m in found] == [
        (0, "user", "Ann", False),
        (1, "assistant", None, True),
        (4, "user", None, False),
    ]
    assert store.search.messages_at("default", []) == []
    assert [m.index for m in store.search.messages_at("other", [("s", 0), ("s", 1)])] == [0]


def test_messages_keep_the_model_that_answered_and_usage_sums_per_session(store: Store) -> None:
    store.ensure_session("default", "chat-m", source="cli")
    store.append_messages(
        "default",
        "chat-m",
        [NewMessage("user", "hi"), NewMessage("assistant", "hello", model="backup-model")],
    )
    store.import_sessions(
        "default",
        [NewSession("chat-i", "cli", [NewMessage("assistant", "old", model="old-model")])],
    )
    got = store.get_messages("default", "chat-m")
    assert [(m.role, m.model) for m in got] == [("user", None), ("assistant", "backup-model")]
    assert got[1].as_new().model == "backup-model"
    assert [m.model for m in store.get_messages("default", "chat-i")] == ["old-model"]
    usage = store.usage
    assert usage is not None

    def record(model: str, session: str, prompt: int, scope: str = "default") -> UsageRecord:
        return UsageRecord(scope, model, "2030-01-07", 1.0, prompt, 1, session_id=session)

    usage.record_usage(
        [
            record("main", "chat-m", 10),
            record("backup-model", "chat-m", 20),
            record("main", "chat-m", 5),
            record("main", "other", 100),
            record("main", "chat-m", 1000, scope="someone-else"),
        ]
    )
    totals = usage.session_usage("default", "chat-m")
    assert [(t.model, t.prompt_tokens, t.completion_tokens, t.calls) for t in totals] == [
        ("backup-model", 20, 1, 1),
        ("main", 15, 2, 2),
    ]
    assert usage.session_usage("default", "nothing-here") == []


def test_own_words_score_the_given_messages_alone(store: Store) -> None:
    """A ranking reordering its first page asks how well those messages' own words match:
    only they are scored (not every row holding a word), a rarer word weighs more, and
    messages of another scope or without the words are left out."""
    store.ensure_session("default", "s", source="api")
    texts = [f"we talked about the weather on day {i}" for i in range(12)]
    texts += ["the weather was fine for the regatta", "nothing to see here", "weather again"]
    records = store.append_messages("default", "s", [NewMessage("user", t) for t in texts])
    store.ensure_session("other", "s", source="api")
    (elsewhere,) = store.append_messages("other", "s", [NewMessage("user", "weather regatta")])
    common, rare, neither, short = (records[i].id for i in (0, 12, 13, 14))
    asked = [common, rare, neither, short, elsewhere.id]
    scores = store.search.own_words("default", ["weather", "regatta"], asked)
    assert set(scores) == {common, rare, short}
    assert scores[rare] > scores[short] > scores[common] > 0  # "regatta" is in one row
    assert store.search.own_words("default", ["weather"], []) == {}
    assert store.search.own_words("default", [], [common]) == {}
