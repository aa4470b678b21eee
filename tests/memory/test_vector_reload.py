"""A process keeps each scope's vectors loaded and reloads them now and then (an edited
message, embedded again, keeps its old vector in memory until then). The reload happens in
the background: the search that finds the vectors old is answered from them at once, not
after the ~0.6 s a reload takes at 50,000 vectors. A stand-in embedder (conftest.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hermes.recall import semantic
from hermes.recall.semantic import SemanticIndex, embed_pending
from hermes.store.base import NewMessage
from hermes.store.sqlite import SQLiteStore
from tests.memory.conftest import Digests
from tests.store_edits import edit_message

SLOW_LOAD_S = 1.0


def test_vectors_are_reloaded_in_the_background_without_stalling_a_search(
    home: Path, digests: Digests, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(home / "state.db")
    try:
        store.ensure_session("default", "s1", source="api")
        texts = ["We adopted a cat.", "Lovely!", "I started pottery.", "Nice.", "Off to Lisbon."]
        store.append_messages(
            "default",
            "s1",
            [NewMessage("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)],
        )
        embed_pending(store, digests)
        index = SemanticIndex(store, digests)
        assert index.search("default", "I started pottery.", limit=1).alone[0].index == 2
        # the message is edited, and embedded again under the same id
        edited = index.search("default", "Off to Lisbon.", limit=1).alone[0]
        edit_message(store, "default", edited.message_id, "Off to Porto instead.")
        embed_pending(store, digests)
        vectors = store.vectors
        assert vectors is not None
        full_load = vectors.load

        def slow_load(*args, after_id=0, **kwargs):  # type: ignore[no-untyped-def]
            if after_id == 0:
                time.sleep(SLOW_LOAD_S)
            return full_load(*args, after_id=after_id, **kwargs)

        monkeypatch.setattr(vectors, "load", slow_load)
        monkeypatch.setattr(semantic, "RELOAD_S", 0.0)  # the loaded vectors are old now
        started = time.monotonic()
        found = index.search("default", "Off to Porto instead.", limit=1).alone
        assert time.monotonic() - started < SLOW_LOAD_S / 2  # answered from memory
        assert found[0].message_id != edited.message_id  # (its old vector, still loaded)
        monkeypatch.setattr(semantic, "RELOAD_S", 300.0)
        deadline = time.monotonic() + 10
        while index._reloading:
            assert time.monotonic() < deadline, "the background reload did not finish"
            time.sleep(0.02)
        found = index.search("default", "Off to Porto instead.", limit=1).alone
        assert found[0].message_id == edited.message_id  # its new vector
    finally:
        store.close()
