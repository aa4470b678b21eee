"""Only what a search by meaning looks at is embedded: a scope's newest
`search.max_vectors` messages. An import of a big history, `hermes sessions reindex` and the
background indexer of `hermes serve` embed those and leave older messages to the words
(at a million messages, embedding them all took hours on 2 cores for nothing). A stand-in
embedder (conftest.py), so no model loads: which messages get vectors is the point, not
what they say."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.recall.indexer import SemanticIndexer
from hermes.recall.semantic import SemanticIndex
from hermes.store.sqlite import SQLiteStore
from tests.conftest import run_cli
from tests.memory.conftest import WINDOW, Digests


def _history(path: Path, sessions: int, per_session: int, tag: str) -> Path:
    lines = [
        json.dumps(
            {
                "id": f"{tag}{s}",
                "started_at": 1_700_000_000 + s * 86_400,
                "messages": [
                    {"role": "user" if i % 2 == 0 else "assistant", "content": f"{tag} {s} {i}"}
                    for i in range(per_session)
                ],
            }
        )
        for s in range(sessions)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _embedded(home: Path, model: str, scope: str) -> list[int]:
    store = SQLiteStore(home / "state.db")
    try:
        rows = store.connection.execute(
            "SELECT id FROM message_vectors WHERE scope = ? AND model = ? ORDER BY id",
            (scope, model),
        ).fetchall()
        newest = store.connection.execute(
            "SELECT id FROM messages WHERE scope = ? ORDER BY id DESC LIMIT ?", (scope, WINDOW)
        ).fetchall()
    finally:
        store.close()
    assert [r[0] for r in rows] == sorted(r[0] for r in newest)[-len(rows) :]
    return [r[0] for r in rows]


def test_an_import_embeds_the_newest_messages_a_search_by_meaning_looks_at(
    home: Path, digests: Digests, tmp_path: Path
) -> None:
    big = _history(tmp_path / "big.jsonl", sessions=12, per_session=100, tag="big")
    r = run_cli("sessions", "import", str(big))
    assert r.returncode == 0, r.stderr
    assert "embedded 1,000 messages for semantic search" in r.stdout
    assert len(_embedded(home, digests.name, "default")) == WINDOW  # the newest 1,000
    # a scope of its own is counted on its own: all of a small one is embedded
    small = _history(tmp_path / "small.jsonl", sessions=2, per_session=10, tag="small")
    r = run_cli("sessions", "import", str(small), "--user", "alice")
    assert r.returncode == 0 and "embedded 20 messages" in r.stdout, r.stderr
    assert len(_embedded(home, digests.name, "user:alice")) == 20
    # the 200 older messages are not "missing" from the semantic index, now or later
    r = run_cli("sessions", "search", "big 0 1", "--json")
    assert r.returncode == 0 and "not in the semantic index" not in r.stderr, r.stderr
    r = run_cli("sessions", "reindex")
    assert r.returncode == 0 and "embedded" not in r.stdout, r.stdout
    assert len(_embedded(home, digests.name, "default")) == WINDOW
    # a search by meaning loads no more than it looks at
    store = SQLiteStore(home / "state.db")
    try:
        index = SemanticIndex(store, digests, max_vectors=WINDOW)
        matrix = index._matrix("default")
        assert matrix is not None and len(matrix.ids) == WINDOW
    finally:
        store.close()


def test_the_background_indexer_embeds_only_each_scopes_newest(
    home: Path, digests: Digests, tmp_path: Path
) -> None:
    big = _history(tmp_path / "big.jsonl", sessions=11, per_session=100, tag="big")
    assert run_cli("sessions", "import", str(big), "--no-embed").returncode == 0
    small = _history(tmp_path / "small.jsonl", sessions=1, per_session=30, tag="small")
    assert run_cli("sessions", "import", str(small), "--user", "bob", "--no-embed").returncode == 0
    store = SQLiteStore(home / "state.db")
    indexer = SemanticIndexer(load_settings(home), store)
    indexer.start()
    try:
        deadline = time.monotonic() + 30
        while indexer.embedded < WINDOW + 30:
            assert time.monotonic() < deadline, f"only {indexer.embedded} embedded"
            time.sleep(0.05)
        time.sleep(0.3)  # a step more: there must be nothing else to embed
    finally:
        indexer.stop()
        store.close()
    assert indexer.embedded == WINDOW + 30
    assert len(_embedded(home, digests.name, "default")) == WINDOW
    assert len(_embedded(home, digests.name, "user:bob")) == 30


def test_an_idle_indexer_does_not_walk_the_older_messages_again(
    home: Path, digests: Digests, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing left to embed, each look starts past what the last one saw: the
    messages older than the window (or already embedded) are not walked every IDLE_S."""
    big = _history(tmp_path / "big.jsonl", sessions=11, per_session=100, tag="big")
    assert run_cli("sessions", "import", str(big)).returncode == 0  # embeds the newest
    monkeypatch.setattr("hermes.recall.indexer.IDLE_S", 0.01)
    store = SQLiteStore(home / "state.db")
    vectors = store.vectors
    assert vectors is not None
    looks: list[int] = []
    pending = vectors.pending

    def recorded(*args, after_id=0, **kwargs):  # type: ignore[no-untyped-def]
        looks.append(after_id)
        return pending(*args, after_id=after_id, **kwargs)

    monkeypatch.setattr(vectors, "pending", recorded)
    newest = vectors.newest_message_id()
    indexer = SemanticIndexer(load_settings(home), store)
    indexer.start()
    try:
        deadline = time.monotonic() + 10
        while len(looks) < 5:
            assert time.monotonic() < deadline, "the indexer did not look"
            time.sleep(0.01)
    finally:
        indexer.stop()
        store.close()
    assert indexer.embedded == 0 and newest == 1100
    assert looks[0] == 0 and set(looks[1:]) == {newest}
