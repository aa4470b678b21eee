"""The VectorStore contract on both backends: pending by cursor, scoped loads, vectors that
leave with their message or lose their meaning when its text changes."""

from __future__ import annotations

import pytest

from hermes.runtime import open_store
from hermes.store.base import NewMessage, NewSession, Store
from tests.recall_helpers import described as describe

MODEL = "test-model"


@pytest.fixture
def store(store_url: str, home) -> Store:
    from hermes.config.settings import load_settings

    s = open_store(
        load_settings(home, env={"HERMES_HOME": str(home), "HERMES_DATABASE_URL": store_url})
    )
    yield s
    s.close()


def _fill(store: Store, scope: str, sid: str, texts: list[str]) -> None:
    store.ensure_session(scope, sid, source="cli")
    store.append_messages(
        scope,
        sid,
        [NewMessage("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
        + [NewMessage("tool", "tool output", tool_call_id="c1", tool_name="x")],
    )


def test_pending_put_load_and_scope(store: Store) -> None:
    vectors = store.vectors
    assert vectors is not None
    _fill(store, "alice", "a1", ["one", "two", ""])
    _fill(store, "bob", "b1", ["three"])
    pending = vectors.pending(MODEL)
    # conversational, non-empty messages only, every scope, oldest first
    assert [(scope, text) for _, scope, text in pending] == [
        ("alice", "one"),
        ("alice", "two"),
        ("bob", "three"),
    ]
    assert vectors.count_pending(MODEL, scope="alice") == 2
    first = vectors.pending(MODEL, limit=1)
    assert vectors.pending(MODEL, after_id=first[0][0]) == pending[1:]
    vectors.put(MODEL, [(mid, scope, f"v{mid}".encode()) for mid, scope, _ in pending])
    assert vectors.pending(MODEL) == []
    assert vectors.count_pending("another-model") == 3
    assert [(r.session_id, r.vector) for r in vectors.load(MODEL, "alice")] == [
        ("a1", f"v{mid}".encode()) for mid, scope, _ in pending if scope == "alice"
    ]
    # who said it: unnamed, the role (a user and an assistant are never one speaker)
    assert [r.speaker for r in vectors.load(MODEL, "alice")] == ["role:user", "role:assistant"]
    assert vectors.count(MODEL, "bob") == 1 and vectors.count(MODEL, "carol") == 0
    described = describe(store, "alice", [mid for mid, _, _ in pending])
    assert [(m.session_id, m.index, m.role) for m in described] == [
        ("a1", 0, "user"),
        ("a1", 1, "assistant"),
    ]


def test_a_loaded_vector_describes_its_message_as_the_search_index_does(store: Store) -> None:
    """A search by meaning ranks its hits beside the words' matches without reading them
    back: where each message is, who said it, its text key and whether it only asks must
    be what the index says of it (`messages_at`) (the key is how a repeated text is shown once)."""
    vectors = store.vectors
    assert vectors is not None
    store.ensure_session("alice", "a1", source="telegram")
    store.append_messages(
        "alice",
        "a1",
        [
            NewMessage("user", "Ooh, which one?", name="Gina"),
            NewMessage("assistant", "I read 'Circe'. Loved it!"),
            NewMessage("user", "Ooh, which one?", name="Gina"),
            NewMessage("user", "Ooh, which one?", name="Jon"),
        ],
    )
    pending = vectors.pending(MODEL)
    vectors.put(MODEL, [(mid, scope, b"v") for mid, scope, _ in pending])
    loaded = vectors.load(MODEL, "alice")
    described = describe(store, "alice", [r.message_id for r in loaded])
    assert [
        (r.message_id, r.session_id, r.message_index, r.role, r.timestamp, r.source)
        + (r.name, r.text_key, r.asks)
        for r in loaded
    ] == [
        (m.message_id, m.session_id, m.index, m.role, m.timestamp, m.source)
        + (m.speaker, m.text_key, m.asks)
        for m in described
    ]
    assert [r.asks for r in loaded] == [True, False, True, True]
    first, _, again, other = loaded
    assert first.text_key == again.text_key != other.text_key  # Jon's words are his own
    assert vectors.load(MODEL, "alice", after_id=again.message_id) == [other]


def test_still_embedded_forgets_deleted_messages(store: Store) -> None:
    vectors = store.vectors
    assert vectors is not None
    _fill(store, "alice", "a1", ["one", "two"])
    _fill(store, "alice", "a2", ["three"])
    _fill(store, "bob", "b1", ["four"])
    (one, two, three, four) = vectors.pending(MODEL)
    vectors.put(MODEL, [(mid, scope, b"v") for mid, scope, _ in (one, two, three, four)])
    ids = [one[0], two[0], three[0], four[0]]
    assert vectors.still_embedded(MODEL, "alice", ids) == set(ids[:3])  # bob's is not hers
    assert vectors.still_embedded("another-model", "alice", ids) == set()
    assert vectors.removed("alice") == vectors.removed("bob") == 0
    vectors.put(MODEL, [(one[0], "alice", b"w")])  # replaced, not removed
    assert vectors.removed("alice") == 0
    assert store.delete_session("alice", "a1")
    assert vectors.still_embedded(MODEL, "alice", ids) == {three[0]}
    assert vectors.still_embedded(MODEL, "alice", []) == set()
    assert (vectors.removed("alice"), vectors.removed("bob")) == (2, 0)  # counted per scope
    assert store.delete_session("alice", "a2")
    assert vectors.removed("alice") == 3


def test_vectors_leave_with_their_session_and_skip_deleted_messages(store: Store) -> None:
    vectors = store.vectors
    assert vectors is not None
    store.import_sessions(
        "alice",
        [NewSession(id="s1", source="import", messages=[NewMessage("user", "hello there")])],
    )
    ((mid, scope, _),) = vectors.pending(MODEL)
    vectors.put(MODEL, [(mid, scope, b"x")])
    assert vectors.count(MODEL, "alice") == 1
    assert store.delete_session("alice", "s1")
    assert vectors.count(MODEL, "alice") == 0
    vectors.put(MODEL, [(mid, scope, b"x")])  # embedded while it was being deleted
    assert vectors.count(MODEL, "alice") == 0


def test_whole_only_finds_messages_stored_with_one_vector(store: Store) -> None:
    """Messages embedded before sentence vectors hold one vector of `size` bytes; the
    re-embedding pass walks them by cursor, one scope or all."""
    vectors = store.vectors
    assert vectors is not None
    _fill(store, "alice", "a1", ["one", "two", "three"])
    _fill(store, "bob", "b1", ["four"])
    (one, two, three, four) = vectors.pending(MODEL)
    vectors.put(MODEL, [(one[0], "alice", b"ab"), (two[0], "alice", b"abcd")])
    vectors.put(MODEL, [(three[0], "alice", b"cd"), (four[0], "bob", b"ef")])
    found = vectors.whole_only(MODEL, 2)
    assert [(mid, scope, text, vec) for mid, scope, text, vec in found] == [
        (one[0], "alice", "one", b"ab"),
        (three[0], "alice", "three", b"cd"),
        (four[0], "bob", "four", b"ef"),
    ]
    assert [r[2] for r in vectors.whole_only(MODEL, 2, scope="bob")] == ["four"]
    assert [r[2] for r in vectors.whole_only(MODEL, 2, after_id=one[0], limit=1)] == ["three"]
    assert vectors.whole_only("another-model", 2) == []


def test_only_a_big_scopes_newest_messages_wait_for_vectors(store: Store) -> None:
    """A search by meaning looks at a scope's newest vectors only, so a scope of more
    conversational messages than that embeds its newest and leaves the rest to words."""
    vectors = store.vectors
    assert vectors is not None
    _fill(store, "alice", "a1", ["one", "two", ""])  # a tool message and an empty one too
    _fill(store, "alice", "a2", ["three", "four"])
    _fill(store, "bob", "b1", ["five", "six"])
    _fill(store, "carol", "c1", ["seven"])
    ids = {text: mid for mid, _, text in vectors.pending(MODEL)}
    starts = vectors.newest_starts(3)
    # alice has 4 conversational messages (of 8): her newest 3 begin at "two"; bob and
    # carol hold no more than 3 messages of any kind
    assert starts == {"alice": ids["two"]}
    assert vectors.newest_starts(3, scope="bob") == {}
    assert vectors.newest_starts(3, scope="alice") == starts
    assert vectors.newest_starts(4) == {"alice": ids["one"]}  # all four: from the first
    assert vectors.newest_starts(2) == {"alice": ids["three"], "bob": ids["five"]}
    texts = [text for _, _, text in vectors.pending(MODEL, starts=starts)]
    assert texts == ["two", "three", "four", "five", "six", "seven"]
    assert [t for _, _, t in vectors.pending(MODEL, scope="alice", starts=starts)] == texts[:3]
    assert vectors.count_pending(MODEL, starts=starts) == 6
    assert vectors.count_pending(MODEL, scope="alice", starts=starts) == 3
    vectors.put(MODEL, [(mid, scope, b"v") for mid, scope, _ in vectors.pending(MODEL)])
    whole = vectors.whole_only(MODEL, 1, starts=starts)
    assert [text for _, _, text, _ in whole] == texts
    # loading keeps to the newest vectors too, oldest first as ever
    newest = vectors.load(MODEL, "alice", newest=2)
    assert [r.message_id for r in newest] == [ids["three"], ids["four"]]
    after = vectors.load(MODEL, "alice", after_id=ids["three"], newest=2)
    assert [r.message_id for r in after] == [ids["four"]]
    assert len(vectors.load(MODEL, "alice")) == 4
    assert vectors.newest_message_id() == ids["seven"] + 1  # carol's tool message
