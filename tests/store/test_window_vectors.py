"""Window vectors (`hermes.recall.windows`) on both backends: which turns a window holds,
and windows that leave with any turn they hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hermes.recall.windows import (
    BEFORE_CHARS,
    embed_windows,
    from_bytes,
    similarities,
    window_texts,
)
from hermes.runtime import open_store
from hermes.store.base import NewMessage, Store
from hermes.store.sqlite import SQLiteStore
from tests.memory.conftest import Digests
from tests.store_edits import delete_message, edit_message

MODEL = Digests.name


@pytest.fixture
def store(store_url: str, home: Path) -> Store:
    from hermes.config.settings import load_settings

    s = open_store(
        load_settings(home, env={"HERMES_HOME": str(home), "HERMES_DATABASE_URL": store_url})
    )
    yield s
    s.close()


def _embedded(store: Store, scope: str, sid: str, messages: list[NewMessage]) -> list[int]:
    """Store `messages` in a new session and give its conversational ones a vector."""
    assert store.vectors is not None
    store.ensure_session(scope, sid, source="cli")
    store.append_messages(scope, sid, messages)
    pending = store.vectors.pending(MODEL, scope=scope)
    store.vectors.put(MODEL, [(mid, sc, b"v") for mid, sc, _ in pending])
    return [mid for mid, _, _ in pending]


def _dialogue() -> list[NewMessage]:
    return [
        NewMessage("user", "Caroline: My mom and I made dinner together.", name="Caroline"),
        NewMessage("assistant", "", tool_calls=[{"id": "c1", "type": "function"}]),
        NewMessage("tool", "tool output", tool_call_id="c1", tool_name="x"),
        NewMessage("assistant", "Melanie: What did you have?", name="Melanie"),
        NewMessage("user", "Caroline: Salads, sandwiches and homemade desserts.", name="Caroline"),
        NewMessage("assistant", "Melanie: Yum!", name="Melanie"),
    ]


def test_a_window_holds_the_turns_before_it_in_its_session(store: Store) -> None:
    """Spoken texts (no "Name: " opening), conversational turns only (no tool call or tool
    output), at most two before, newest first; a session's first turn has none."""
    vectors = store.vectors
    assert vectors is not None
    ids = _embedded(store, "alice", "a1", _dialogue())
    _embedded(store, "bob", "b1", [NewMessage("user", "Bob's own turn")])
    pending = vectors.pending_windows(MODEL, scope="alice")
    assert [(w.message_id, w.turns) for w in pending] == [
        (ids[0], ("My mom and I made dinner together.",)),
        (ids[1], ("What did you have?", "My mom and I made dinner together.")),
        (
            ids[2],
            (
                "Salads, sandwiches and homemade desserts.",
                "What did you have?",
                "My mom and I made dinner together.",
            ),
        ),
        (ids[3], ("Yum!", "Salads, sandwiches and homemade desserts.", "What did you have?")),
    ]
    assert window_texts(pending[2].turns) == [
        "My mom and I made dinner together. What did you have? Salads, sandwiches and "
        "homemade desserts.",
    ]
    assert window_texts(pending[1].turns) == [
        "My mom and I made dinner together. What did you have?"
    ]
    assert window_texts(pending[0].turns) == ["My mom and I made dinner together."]
    assert [w.scope for w in vectors.pending_windows(MODEL)] == ["alice"] * 4 + ["bob"]
    assert vectors.pending_windows(MODEL, after_id=ids[2]) == pending[3:] + [
        vectors.pending_windows(MODEL, scope="bob")[0]
    ]
    assert vectors.pending_windows("another-model") == []  # no vector of it: no window yet


def test_embedded_windows_are_read_back_by_id_within_their_scope(store: Store) -> None:
    vectors = store.vectors
    assert vectors is not None
    ids = _embedded(store, "alice", "a1", _dialogue())
    (bobs,) = _embedded(store, "bob", "b1", [NewMessage("user", "Bob's own turn")])
    embedder = Digests()
    assert embed_windows(store, embedder, scope="alice") == (4, ids[-1])
    assert vectors.pending_windows(MODEL, scope="alice") == []
    assert [w.message_id for w in vectors.pending_windows(MODEL)] == [bobs]
    stored = vectors.windows(MODEL, "alice", [*ids, bobs])
    assert sorted(stored) == ids  # bob's has none yet, and is not alice's anyway
    turns = ["Salads, sandwiches and homemade desserts.", "What did you have?"]
    turns.append("My mom and I made dinner together.")
    expected = embedder.encode(window_texts(turns))
    got = from_bytes(stored[ids[2]], embedder.dimensions)
    assert np.allclose(got, expected, atol=1e-2)  # float16
    query = embedder.encode_query("what food did they have?")
    near = similarities(store, MODEL, "alice", query, [ids[2], bobs])
    assert list(near) == [ids[2]]
    assert np.allclose(near[ids[2]], expected @ query, atol=1e-2)
    assert vectors.windows(MODEL, "bob", ids) == {}
    assert vectors.windows("another-model", "alice", ids) == {}


def test_windows_leave_with_their_session(store: Store) -> None:
    vectors = store.vectors
    assert vectors is not None
    ids = _embedded(store, "alice", "a1", _dialogue())
    embed_windows(store, Digests())
    assert store.delete_session("alice", "a1")
    assert vectors.windows(MODEL, "alice", ids) == {}
    vectors.put_windows(MODEL, [(ids[0], "alice", b"w")])  # embedded while it was deleted
    assert vectors.windows(MODEL, "alice", ids) == {}


@pytest.mark.parametrize("change", ["delete", "edit"])
def test_a_turn_deleted_or_edited_takes_the_windows_holding_it(home: Path, change: str) -> None:
    """No Hermes path changes one stored message, but a person editing state.db might: a
    window must not keep the meaning of a text that is gone (the two after it hold it)."""
    store = SQLiteStore(home / "state.db")
    try:
        assert store.vectors is not None
        ids = _embedded(store, "alice", "a1", _dialogue())
        (other,) = _embedded(store, "alice", "a2", [NewMessage("user", "another session's turn")])
        embed_windows(store, Digests())
        if change == "delete":
            delete_message(store, "alice", ids[0])
        else:
            edit_message(store, "alice", ids[0], "We ate out.")
        kept = store.vectors.windows(MODEL, "alice", [*ids, other])
        # its own and the next two turns' windows are gone; the fourth turn's and the
        # other session's stay
        assert sorted(kept) == [ids[3], other]
    finally:
        store.close()


def test_a_window_keeps_the_message_whole_after_long_turns() -> None:
    """The turns before take at most `BEFORE_CHARS`, newest first and each by its end, so
    the model's 256 word pieces never cut off the message the window is for."""
    question = "So which one did you pick in the end?"
    long_answer = ("I compared them for weeks. " * 60).strip()
    (window,) = window_texts(["The red one.", question, long_answer])
    assert window.endswith(f"{question} The red one.")
    assert len(window) <= BEFORE_CHARS + len(" The red one.")
    (long_before,) = window_texts(["Yes.", long_answer, "Did you decide?"])
    assert long_before.endswith("weeks. Yes.") and not long_before.startswith("Did")
    assert long_before.split(" ", 1)[0] in {"I", "compared", "them", "for", "weeks."}
