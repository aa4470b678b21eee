"""Semantic search with the real embedding model: paraphrases found, scopes kept apart,
vectors following their messages, the background indexer, and a clear error without the
extra. Marked `semantic`: only these tests load the model (once per test process)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hermes.config.settings import load_settings
from hermes.memory import embeddings
from hermes.recall import first_pass
from hermes.recall.indexer import SemanticIndexer
from hermes.recall.nearest import NearestOptions
from hermes.recall.search import session_search
from hermes.recall.semantic import SemanticIndex
from hermes.services import Services
from hermes.store.base import NewMessage, Store
from hermes.store.sqlite import SQLiteStore
from hermes.tools.registry import ToolContext, Toolset
from tests.conftest import run_cli
from tests.recall_helpers import described as describe
from tests.store_edits import edit_message

pytestmark = pytest.mark.semantic

PLANTED = "I finally signed up for a pottery course at the community centre, first one is Monday!"
FILLER = [
    "Work has been hectic, lots of meetings and deadlines.",
    "Same here, it's been a lot but we're managing.",
    "Did you watch anything good lately? I need a new series.",
    "The weather turned cold so fast this week.",
    "My car needs new tyres before winter, ugh.",
    "We had pizza on Friday, the kids loved it.",
    "I'm reading a thriller, can't put it down.",
    "The neighbours are renovating again, so much noise.",
]
QUESTION = "which class did I enroll in"  # shares no content word with PLANTED
LONG_TURN = (  # PLANTED said among other sentences
    "The kids had a school project about animals, the house is full of glue. "
    "I finally signed up for a pottery course at the community centre, first one is "
    "Monday! Anyway, how is your week going so far?"
)
NEAR_MISSES = [  # closer to QUESTION than LONG_TURN's whole text is
    "School starts next week, we still need to buy notebooks and pencils.",
    "I finally finished the report for my manager, what a relief.",
    "Did you sign the kids up for anything this summer? Ours are bored already.",
]


def _session(sid: str, texts: list[str], start: float = 1_700_000_000) -> str:
    return json.dumps(
        {
            "id": sid,
            "started_at": start,
            "messages": [
                {"role": "user" if i % 2 == 0 else "assistant", "content": t}
                for i, t in enumerate(texts)
            ],
        }
    )


@pytest.fixture
def history(tmp_path: Path) -> Path:
    data = tmp_path / "history.jsonl"
    lines = [_session(f"f{i}", FILLER[i:] + FILLER[:i]) for i in range(4)]
    lines.insert(2, _session("planted", [FILLER[0], FILLER[1], PLANTED, FILLER[3]]))
    data.write_text("\n".join(lines) + "\n")
    return data


def _hits(query: str, *args: str) -> list[tuple[str, int]]:
    r = run_cli("sessions", "search", query, "--json", *args)
    assert r.returncode == 0, r.stderr
    return [(h["session_id"], h["message_index"]) for h in json.loads(r.stdout)["hits"]]


def _ranked_with_near_copies(query: str) -> list[tuple[str, int]]:
    """The ranking with near copies set aside and meaning weighted high, as it was tuned on
    generated chat (`near_copies` and these weights are not the defaults: on
    real conversations a turn near another is more often more evidence than a copy)."""
    from dataclasses import replace

    from hermes.recall.ranking import DEFAULT_CONFIG, rank_messages

    store, index = _index()
    try:
        config = replace(
            DEFAULT_CONFIG,
            near_copies=True,
            semantic=3.0,
            context_weight=2.0,
            speaker_meaning=2.0,
            per_session=2,
        )
        ranked = rank_messages(
            store.search, "default", query, limit=10, config=config, semantic=index
        )
        return [(r.session_id, r.index) for r in ranked]
    finally:
        store.close()


def _import(tmp_path: Path, lines: list[str]) -> None:
    data = tmp_path / "history.jsonl"
    data.write_text("\n".join(lines) + "\n")
    r = run_cli("sessions", "import", str(data))
    assert r.returncode == 0, r.stderr


def _index() -> tuple[SQLiteStore, SemanticIndex]:
    """The store of this test's home and a semantic index over it (close the store)."""
    store = SQLiteStore(load_settings().home / "state.db")
    embedder = embeddings.load(load_settings())
    assert embedder is not None
    return store, SemanticIndex(store, embedder)


def test_a_paraphrased_question_finds_the_turn_words_cannot(history, monkeypatch):
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    r = run_cli("sessions", "import", str(history))
    assert r.returncode == 0, r.stderr
    assert "embedded 36 messages for semantic search" in r.stdout
    assert _hits(QUESTION)[0] == ("planted", 2)
    # the same store searched by words alone cannot find it
    monkeypatch.setenv("HERMES_EMBEDDINGS", "off")
    assert ("planted", 2) not in _hits(QUESTION)


def test_search_embeds_what_was_stored_without_vectors(history, monkeypatch):
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    assert run_cli("sessions", "import", str(history), "--no-embed").returncode == 0
    store = SQLiteStore(load_settings().home / "state.db")
    assert store.vectors is not None
    assert store.vectors.count(embeddings.MODEL_NAME, "default") == 0
    store.close()
    # more missing than a search embeds first: it searches by words and says what to run
    monkeypatch.setattr("hermes.cli.sessions.SEARCH_EMBED_MAX", 10)
    r = run_cli("sessions", "search", QUESTION, "--json")
    assert r.returncode == 0 and "`hermes sessions reindex` adds them" in r.stderr
    assert "36 messages are not in the semantic index yet" in r.stderr
    monkeypatch.setattr("hermes.cli.sessions.SEARCH_EMBED_MAX", 20_000)
    assert _hits(QUESTION)[0] == ("planted", 2)
    store = SQLiteStore(load_settings().home / "state.db")
    assert store.vectors is not None
    assert store.vectors.count(embeddings.MODEL_NAME, "default") == 36
    store.close()


def test_vectors_never_cross_scopes_and_leave_with_their_session(history, monkeypatch):
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    assert run_cli("sessions", "import", str(history), "--user", "alice").returncode == 0
    other = history.parent / "bob.jsonl"
    other.write_text(_session("bob-1", FILLER[:4]) + "\n")
    assert run_cli("sessions", "import", str(other), "--user", "bob").returncode == 0
    assert all(sid == "bob-1" for sid, _ in _hits(QUESTION, "--user", "bob"))
    assert _hits(QUESTION, "--user", "alice")[0] == ("planted", 2)

    store = SQLiteStore(load_settings().home / "state.db")
    assert store.vectors is not None
    before = store.vectors.count(embeddings.MODEL_NAME, "user:alice")
    assert store.delete_session("user:alice", "planted")
    assert store.vectors.count(embeddings.MODEL_NAME, "user:alice") == before - 4
    store.close()
    assert ("planted", 2) not in _hits(QUESTION, "--user", "alice")


def test_a_loaded_index_never_finds_a_message_deleted_or_edited_since(history, monkeypatch):
    """`hermes serve` keeps each scope's vectors in memory for minutes; a message deleted
    or edited meanwhile must not come back from them, with its old place or its old text."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    assert run_cli("sessions", "import", str(history)).returncode == 0
    store, index = _index()
    try:
        found = index.search("default", QUESTION, limit=40).alone
        assert (found[0].session_id, found[0].index) == ("planted", 2)
        assert found[0].role == "user" and not found[0].asks
        ids = [m.message_id for m in found]
        described = {m.message_id: m for m in describe(store, "default", ids)}
        assert [(m.session_id, m.index, m.timestamp, m.source, m.text_key) for m in found] == [
            (m.session_id, m.index, m.timestamp, m.source, m.text_key)
            for m in (described[i] for i in ids)
        ]
        # while no vector of the scope was deleted, nobody asks which hits still exist
        assert store.vectors is not None
        asked: list[int] = []
        check = store.vectors.still_embedded
        monkeypatch.setattr(
            store.vectors, "still_embedded", lambda *a: asked.append(1) or check(*a)
        )
        assert [m.message_id for m in index.search("default", QUESTION, limit=40).alone] == ids
        assert not asked
        edited = found[1]
        edit_message(store, "default", edited.message_id, "Let's talk tomorrow.")
        edits = index.search("default", QUESTION, limit=40).alone
        assert edited.message_id not in [m.message_id for m in edits] and asked
        assert store.delete_session("default", "planted")
        again = index.search("default", QUESTION, limit=40)
        ids = [m.message_id for m in again.alone + again.in_context]
        assert found[0].message_id not in ids and edited.message_id not in ids
        assert len(again.alone) == len(found) - 5  # the planted session's four, the edited one
    finally:
        store.close()


async def test_the_tool_and_the_background_indexer(home: Path, monkeypatch):
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    settings = load_settings(home)
    store = SQLiteStore(home / "state.db")
    indexer = SemanticIndexer(settings, store)
    indexer.start()
    try:
        for sid, texts in (("a", FILLER[:4]), ("b", [FILLER[4], PLANTED]), ("c", FILLER[5:])):
            store.ensure_session("default", sid, source="api")
            store.append_messages(
                "default",
                sid,
                [NewMessage("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)],
            )
        assert store.vectors is not None
        deadline = time.monotonic() + 60
        while store.vectors.count(embeddings.MODEL_NAME, "default") < 9:
            assert time.monotonic() < deadline, "the indexer did not embed the new messages"
            await asyncio.sleep(0.1)
    finally:
        indexer.stop()
    services = Services(settings)
    services.provide(store, Store)  # type: ignore[type-abstract]
    ctx = ToolContext(scope="default", session_id="live", services=services)
    outcome = await Toolset([session_search]).call(
        "session_search", json.dumps({"query": QUESTION, "limit": 1}), ctx
    )
    assert outcome.ok, outcome.text
    result = json.loads(outcome.text)
    assert [(r["session_id"], r["match_index"]) for r in result["results"]] == [("b", 1)]
    store.close()


def test_on_without_the_runtime_says_what_to_do(history, monkeypatch):
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    monkeypatch.setattr(embeddings, "extra_installed", lambda: False)
    monkeypatch.setattr(embeddings, "RUNTIME_MODULES", ("numpy", "no_such_module_here"))
    r = run_cli("sessions", "import", str(history))
    assert r.returncode == 1
    assert "no_such_module_here cannot be imported" in r.stderr
    assert "search.embeddings: off" in r.stderr
    assert "Traceback" not in r.stderr


def test_doctor_says_whether_search_uses_meaning(monkeypatch):
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    assert "semantic_search: ok (semantic search on (all-MiniLM-L6-v2" in run_cli("doctor").stdout
    monkeypatch.setenv("HERMES_EMBEDDINGS", "off")
    assert "semantic search off (search.embeddings: off)" in run_cli("doctor").stdout


def test_the_bundled_model_gives_the_original_models_vectors_and_writes_its_graph_once(
    tmp_path, caplog
):
    """The graph written from the shipped float16 weights gives the vectors the original
    float32 model gives through sentence-transformers (recorded in data/)."""
    from hermes.memory.embedding_onnx import OnnxMiniLM, graph_path

    reference = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
    cache = tmp_path / "cache"
    vectors = OnnxMiniLM(embeddings.MODEL_NAME, cache).encode(reference["texts"])
    expected = np.array(reference["vectors"], dtype=np.float32)
    assert vectors.shape == expected.shape == (len(reference["texts"]), 384)
    assert (vectors * expected).sum(axis=1).min() > 0.9999  # cosine to the original's
    assert abs(vectors - expected).max() < 2e-3
    # one at a time (a query) equals the same text inside a padded batch
    planted = reference["texts"].index("I adopted a greyhound from the shelter last spring.")
    one = OnnxMiniLM(embeddings.MODEL_NAME, cache).encode([reference["texts"][planted]])[0]
    assert abs(one - vectors[planted]).max() < 1e-5
    onnx_vectors = OnnxMiniLM(embeddings.MODEL_NAME, cache).encode(["x", "y", PLANTED])

    graph = graph_path(cache)
    assert graph.is_file()
    made = graph.stat().st_mtime_ns
    OnnxMiniLM(embeddings.MODEL_NAME, cache)
    assert graph.stat().st_mtime_ns == made  # reused, not exported again

    graph.write_bytes(b"not a graph")  # a damaged cache file is made again
    again = OnnxMiniLM(embeddings.MODEL_NAME, cache).encode([PLANTED])[0]
    assert abs(again - onnx_vectors[2]).max() < 1e-5
    assert "did not load" in caplog.text


def test_questions_are_encoded_by_an_int8_graph_close_to_the_full_one(tmp_path, caplog):
    """A search question goes through the int8 graph (half the time): its vector stays
    close to the full model's, and the graph is made once, and again if damaged."""
    from hermes.memory.embedding_onnx import OnnxMiniLM, query_graph_path

    cache = tmp_path / "cache"
    model = OnnxMiniLM(embeddings.MODEL_NAME, cache)
    questions = [QUESTION, "When did Audrey get hurt?", "日本語のテキストです。"]
    full = model.encode(questions)
    for question, vector in zip(questions, full, strict=True):
        quick = model.encode_query(question)
        assert quick.shape == (384,)
        assert 0.9 < float(quick @ vector) < 0.9999  # near, yet another graph
    graph = query_graph_path(cache)
    made = graph.stat().st_mtime_ns
    OnnxMiniLM(embeddings.MODEL_NAME, cache)
    assert graph.stat().st_mtime_ns == made  # reused
    graph.write_bytes(b"not a graph")
    again = OnnxMiniLM(embeddings.MODEL_NAME, cache).encode_query(QUESTION)
    assert float(again @ full[0]) > 0.9
    assert "question graph" in caplog.text and graph.stat().st_size > 1_000_000


def test_a_named_question_matches_the_event_not_the_greeting(tmp_path, monkeypatch):
    """The name in "When did Audrey get hurt?" is for the speaker prior; by meaning, the
    question must land on the injury, not on a turn that merely says "Audrey"."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    turns = [
        ("Andrew", "Audrey! So good to hear from you, Audrey."),
        ("Audrey", "Hey Andrew, how was your week?"),
        ("Andrew", "Busy with the new job, but fine."),
        ("Audrey", "I twisted my knee yesterday while hiking, so I'm resting for a bit."),
        ("Andrew", "Oh no, take it easy and rest up."),
        ("Audrey", "Audrey here again, just checking in!"),
    ]
    session = {
        "id": "d1",
        "started_at": 1_700_000_000,
        "messages": [
            {"role": "user" if i % 2 == 0 else "assistant", "name": who, "content": text}
            for i, (who, text) in enumerate(turns)
        ],
    }
    data = tmp_path / "dialogue.jsonl"
    data.write_text(json.dumps(session) + "\n")
    assert run_cli("sessions", "import", str(data)).returncode == 0
    assert _hits("When did Audrey get hurt?")[0] == ("d1", 3)


def test_a_phrase_said_in_every_session_does_not_crowd_out_the_answer(tmp_path, monkeypatch):
    """A line repeated in 150 sessions is nearer the question than the answer is; listed
    once, it leaves room for the answer (listed each time, it filled every candidate slot)."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    repeated = "A friend invited me to a concert next month, I might go."
    answer = "We saw Coldplay live two days ago, the energy in the crowd was amazing."
    lines = [_session(f"s{i:03d}", [repeated, FILLER[i % 8]]) for i in range(150)]
    lines.append(_session("gig", [FILLER[0], FILLER[1], answer, FILLER[2]]))
    _import(tmp_path, lines)
    hits = _hits("When did I go to the concert?")
    assert ("gig", 2) in hits[:2]
    assert sum(1 for sid, i in hits if sid.startswith("s") and i == 0) == 1
    # the index itself: the live session's turns left out, the rest still listed in full
    store, index = _index()
    near = index.search(
        "default", "When did I go to the concert?", limit=5, exclude_sessions=["gig"]
    )
    assert len(near.alone) == len(near.in_context) == 5
    assert all(m.session_id != "gig" for m in near.alone + near.in_context)
    assert len({m.text_key for m in near.alone}) == 5
    flooded = index.search(
        "default", "When did I go to the concert?", limit=5, options=NearestOptions(distinct=False)
    )
    assert len({m.text_key for m in flooded.alone}) == 1  # five copies of the one phrase
    store.close()


def test_a_line_said_again_in_other_words_does_not_crowd_out_the_answer(tmp_path, monkeypatch):
    """Forty sessions say one thing with a different opener and closer each time (no two
    texts equal), each nearer the question than the answer is. Near copies of one speaker
    count as one (two at most in a semantic list), so the answer still comes first."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    line = "i'm thinking about taking a class of some kind, maybe art or music."
    openers = ["Ha, ", "So ", "Anyway, ", "Well, ", "Honestly, "]
    closers = [
        " Anyway.",
        " Ha.",
        " Long story.",
        " More soon.",
        "",
        " Crazy, right?",
        " Hm.",
        " Yep.",
    ]
    said = [o + line + c for o in openers for c in closers]  # fmt: skip
    lines = [_session(f"v{i:02d}", [text, FILLER[i % 8]]) for i, text in enumerate(said)]
    lines.append(_session("planted", [FILLER[0], FILLER[1], PLANTED, FILLER[3]], start=1.6e9))
    _import(tmp_path, lines)
    assert _ranked_with_near_copies(QUESTION)[0] == ("planted", 2)
    store, index = _index()
    near = index.search("default", QUESTION, limit=5)
    texts = [
        store.connection.execute(
            "SELECT content FROM messages WHERE id = ?", (m.message_id,)
        ).fetchone()[0]
        for m in near.alone
    ]
    assert [line in text for text in texts] == [True, True, False, False, False]
    assert PLANTED in texts
    copies = near.same_as([m.message_id for m in near.alone])
    assert copies == {near.alone[1].message_id: near.alone[0].message_id}
    assert near.same_as([10**9]) == {}  # no vector for it (yet): no copy of anything
    store.close()


def test_a_long_message_is_found_by_the_sentence_that_answers(tmp_path, monkeypatch):
    """A long turn says its point among other sentences; its whole embedding is diluted
    (about 0.16 to the question, below an unrelated turn), its sentence is not (0.28). A
    message counts by its best sentence too, so the turn comes first."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    lines = [_session(f"n{i}", [text, FILLER[i]]) for i, text in enumerate(NEAR_MISSES)]
    lines.append(_session("long", [FILLER[4], FILLER[5], LONG_TURN], start=1.6e9))
    _import(tmp_path, lines)
    assert _hits(QUESTION)[0] == ("long", 2)

    store, index = _index()
    assert store.vectors is not None
    stored = {r.session_id: r.vector for r in store.vectors.load(embeddings.MODEL_NAME, "default")}
    assert len(stored["long"]) == 2 * 384 * 4  # the whole text and its three sentences
    first = index.search("default", QUESTION, limit=4).alone[0]
    assert (first.session_id, first.index) == ("long", 2)
    whole_only = index.search(
        "default", QUESTION, limit=4, options=NearestOptions(sentences=0.0)
    ).alone
    assert (whole_only[0].session_id, whole_only[0].index) != ("long", 2)
    # sentences count against the same cap as messages: the newest ones are kept
    small = SemanticIndex(store, index.embedder, max_vectors=2)
    assert small.search("default", QUESTION, limit=4).alone[0].session_id == "long"
    matrix = small._matrix("default")
    assert matrix is not None
    assert len(matrix.ids) == 2 and len(matrix.parts) == 2
    assert list(matrix.part_rows) == [1, 1]  # two of the long turn's three sentences
    store.close()


@pytest.mark.parametrize("cap", [50_000, 3])
def test_a_matrix_grown_by_newer_messages_is_the_one_loaded_at_once(tmp_path, monkeypatch, cap):
    """A cached matrix takes in messages embedded since it loaded: whole texts and
    sentences in one table, cut to the newest `cap` of each, exactly as a fresh load."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    _import(tmp_path, [_session("a", [FILLER[0], LONG_TURN]), _session("b", FILLER[1:3])])
    store, grown = _index()
    grown.max_vectors = cap
    before = grown._matrix("default")
    assert before is not None and len(before.part_rows)
    _import(tmp_path, [_session("c", [LONG_TURN, FILLER[3]], start=1.6e9)])
    after, fresh = grown._matrix("default"), SemanticIndex(store, grown.embedder, max_vectors=cap)
    once = fresh._matrix("default")
    assert after is not None and once is not None and after is not before
    assert after.ids.tolist() == once.ids.tolist() and len(after.ids) == min(cap, 6)
    assert after.part_rows.tolist() == once.part_rows.tolist()
    assert np.array_equal(after.table, once.table)
    assert np.array_equal(after.vectors, once.vectors) and len(after.parts) == min(cap, 7)
    found = [(m.session_id, m.index) for m in grown.search("default", QUESTION, limit=3).alone]
    assert found == [
        (m.session_id, m.index) for m in fresh.search("default", QUESTION, limit=3).alone
    ]
    store.close()


def test_a_line_said_again_amid_other_small_talk_does_not_crowd_out_the_answer(
    tmp_path, monkeypatch
):
    """One line repeated in many long turns, each time among other sentences, is one line
    said again: the turns' whole texts differ, but the sentence that scores is the same, so
    its copies take two places in each semantic list and the answer keeps one."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    line = "A friend invited me to a concert next month, I might go."
    around = [
        "Work has been hectic, lots of meetings and deadlines.",
        "The weather turned cold so fast this week, I need a new coat.",
        "My car needs new tyres before winter, it's always something.",
        "We had pizza on Friday and the kids loved every bite of it.",
        "I'm reading a thriller at night and I can't put it down.",
        "The neighbours are renovating again, there is so much noise.",
        "I've been trying to cook more at home, made a curry last night.",
        "We're redoing the garden this year, there is lots of planning.",
    ]
    lines = [
        _session(f"s{i}", [f"{around[i]} {line} {around[-1 - i]}", FILLER[i]], start=1.6e9 + i)
        for i in range(8)
    ]
    answer = (
        "The kids have a school project about animals, glue everywhere. We saw Coldplay live "
        "yesterday, the energy in the crowd was amazing. How has your week been so far?"
    )
    lines.insert(3, _session("answer", [FILLER[6], answer, FILLER[7]], start=1.5e9))
    _import(tmp_path, lines)
    question = "When did I go to the concert?"
    # the eight copies took all ten places before
    assert ("answer", 1) in _ranked_with_near_copies(question)

    store, index = _index()
    alone = [(m.session_id, m.index) for m in index.search("default", question, limit=5).alone]
    assert alone[2] == ("answer", 1) and all(sid.startswith("s") for sid, _ in alone[:2])
    by_whole_texts = index.search(
        "default", question, limit=5, options=NearestOptions(sentence_copies=False)
    ).alone
    assert all(m.session_id.startswith("s") for m in by_whole_texts)  # eight "different" texts
    store.close()


def test_reindex_gives_older_long_messages_their_sentence_vectors(tmp_path, monkeypatch):
    """A store embedded before sentence vectors existed holds one vector per message;
    `hermes sessions reindex` adds the sentences' (encoding only them), after which the
    long turn is found by its sentence as if it had been embedded today."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    lines = [_session(f"n{i}", [text, FILLER[i]]) for i, text in enumerate(NEAR_MISSES)]
    lines.append(_session("long", [FILLER[4], FILLER[5], LONG_TURN], start=1.6e9))
    _import(tmp_path, lines)
    store = SQLiteStore(load_settings().home / "state.db")
    one = 2 * 384
    with store.connection:  # as an older Hermes stored them: the whole text's vector only
        store.connection.execute("UPDATE message_vectors SET vec = substr(vec, 1, ?)", (one,))
    assert _hits(QUESTION)[0] != ("long", 2)

    r = run_cli("sessions", "reindex")
    assert r.returncode == 0, r.stderr
    assert "embedded the sentences of 3 older long messages on their own" in r.stdout
    blobs = dict(
        store.connection.execute(
            "SELECT m.content, v.vec FROM message_vectors v JOIN messages m USING (id)"
        ).fetchall()
    )
    assert len(blobs[LONG_TURN]) == 4 * one and len(blobs[FILLER[4]]) == one
    assert _hits(QUESTION)[0] == ("long", 2)
    again = run_cli("sessions", "reindex")  # nothing left to do: nothing said
    assert again.returncode == 0 and "sentences" not in again.stdout
    store.close()


def test_a_message_is_split_into_the_sentences_that_say_something() -> None:
    from hermes.recall.semantic import parts

    assert parts("I finally signed up for a pottery course at the centre.") == []
    assert parts("Haha, yes! Totally.") == []
    assert parts("Hey! The kids are wild this week, glue everywhere. I signed up for a "
                 "pottery course. How's work?") == [
        "The kids are wild this week, glue everywhere.",
        "I signed up for a pottery course.",
    ]  # fmt: skip
    assert parts("陶芸教室に申し込みました、月曜日から。よろしく。") == [
        "陶芸教室に申し込みました、月曜日から。"
    ]


@pytest.mark.semantic
def test_search_by_meaning_needs_no_pytorch(tmp_path):
    """The default install has no PyTorch: embedding and searching by meaning never import
    it (a subprocess, so nothing imported by other tests counts)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from hermes.memory.embedding_onnx import OnnxMiniLM\n"
        "import hermes.recall.semantic, hermes.recall.indexer, hermes.cli.sessions\n"
        f"model = OnnxMiniLM('all-MiniLM-L6-v2', Path({str(tmp_path)!r}))\n"
        "assert model.encode(['my pet']).shape == (1, 384)\n"
        "assert model.encode_query('a greyhound').shape == (384,)\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'sentence_transformers', 'transformers'))\n"
        "print(heavy)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_a_big_scope_is_scored_first_in_fewer_dimensions_then_exactly(tmp_path, monkeypatch):
    """Above `first_pass.APPROX_ROWS` rows a first pass in the matrix's main directions
    picks the rows scored exactly: with a shortlist as long as the scope the lists are the
    exact product's, the page's similarities are exact whatever the shortlist, and a grown
    matrix keeps its projection (only the new rows are projected)."""
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    lines = [_session(f"f{i}", FILLER[i:] + FILLER[:i]) for i in range(4)]
    _import(tmp_path, [*lines, _session("long", [FILLER[0], LONG_TURN, *NEAR_MISSES])])
    store, exact = _index()
    want = exact.search("default", QUESTION, limit=5)
    monkeypatch.setattr(first_pass, "APPROX_ROWS", 1)
    monkeypatch.setattr(first_pass, "DIMENSIONS", 4)  # a crude first pass
    monkeypatch.setattr(first_pass, "SHORTLIST", 10_000)
    index = SemanticIndex(store, exact.embedder)
    got = index.search("default", QUESTION, limit=5)

    def listed(found: list) -> list[tuple[int, float]]:
        return [(m.message_id, round(m.score, 4)) for m in found]

    assert listed(got.alone) == listed(want.alone) and listed(got.alone)
    assert listed(got.in_context) == listed(want.in_context)
    monkeypatch.setattr(first_pass, "SHORTLIST", 1)
    few = index.search("default", QUESTION, limit=5)
    ids = [m.message_id for m in want.alone]
    assert few.similarities(ids).keys() == want.similarities(ids).keys()
    for mid, scores in want.similarities(ids).items():
        assert few.similarities([mid])[mid] == pytest.approx(scores, abs=1e-4)
    matrix = index._matrix("default")
    assert matrix is not None and matrix._reduced is not None
    basis = matrix._reduced[0]
    _import(tmp_path, [_session("later", [PLANTED, FILLER[5]], start=1.8e9)])
    grown = index._matrix("default")
    assert grown is not None and grown is not matrix and grown._reduced is not None
    assert grown._reduced[0] is basis and len(grown.ids) == len(matrix.ids) + 2
    columns = first_pass.project(grown.table, basis)
    assert grown._reduced[1].shape == columns.shape == (first_pass.DIMENSIONS, len(grown.table))
    assert np.allclose(grown._reduced[1], columns, atol=1e-5)
    store.close()


def test_the_first_pass_scores_every_row_as_its_projection_does() -> None:
    """The projected table is kept a column per row (a faster product); each row's score
    is still its projection's dot product with the query's, and a grown table's columns
    are the newest ones of its blocks, in order."""
    rng = np.random.default_rng(3)
    table = rng.standard_normal((300, 384)).astype(np.float32)
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    basis = first_pass.projection(table)
    columns = first_pass.project(table, basis)
    assert columns.shape == (first_pass.DIMENSIONS, 300) and columns.flags.c_contiguous
    query = table[17]
    want = (table @ basis) @ (query @ basis)
    assert np.allclose(first_pass.scores(query, basis, columns), want, atol=1e-5)
    assert int(np.argmax(first_pass.scores(query, basis, columns))) == 17
    blocks = [columns[:, :120], columns[:, 120:200], columns[:, 200:]]
    kept = np.concatenate(first_pass.last_columns(blocks, 150), axis=1)
    assert np.array_equal(kept, columns[:, -150:])
    assert np.array_equal(np.concatenate(first_pass.last_columns(blocks, 300), axis=1), columns)
