"""The search index catches up with the messages (migration 23): a turn's write does no index
work, the store's writer indexes waiting messages when idle, and every search sees every
message stored before it. Whatever happens to a message while it waits, or to one the index
holds, the index never drifts from the messages (FTS5's own integrity check)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.recall.ranking import rank_messages
from hermes.store.base import NewMessage, NewSession
from hermes.store.migrations import MIGRATIONS
from hermes.store.search_catchup import catch_up, waiting
from hermes.store.search_schema import AFTER_CHARS, BEFORE_CHARS, SEARCH_TABLES
from hermes.store.sqlite import SQLiteStore
from tests.store_edits import delete_message, edit_message


@pytest.fixture
def store(tmp_path: Path):
    s = SQLiteStore(tmp_path / "state.db")
    yield s
    s.close()


def fts_intact(store: SQLiteStore) -> None:
    """FTS5's integrity check of every table against its view, without catching up."""
    with store.lock:
        for table in SEARCH_TABLES:
            store.connection.execute(
                f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)"
            )


def indexed_rows(store: SQLiteStore) -> int:
    return int(
        store.connection.execute("SELECT count(*) FROM message_exact_fts_docsize").fetchone()[0]
    )


def expected_windows(store: SQLiteStore) -> list[tuple[int, str, str, str]]:
    """Every conversational message's window, computed here from the messages themselves."""
    rows = store.connection.execute(
        "SELECT id, scope, session_id, role, content FROM messages ORDER BY scope, session_id, idx"
    ).fetchall()
    by_session: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for mid, scope, session, role, content in rows:
        if role in ("user", "assistant") and content:
            by_session.setdefault((scope, session), []).append((mid, content))
    out = []
    for talk in by_session.values():
        for i, (mid, text) in enumerate(talk):
            before = talk[i - 1][1][-BEFORE_CHARS:] if i else ""
            after = talk[i + 1][1][:AFTER_CHARS] if i + 1 < len(talk) else ""
            out.append((mid, before, text, after))
    return sorted(out)


def indexed_windows(store: SQLiteStore) -> list[tuple[int, str, str, str]]:
    return sorted(
        store.connection.execute("SELECT id, before, body, after FROM message_windows").fetchall()
    )


def test_a_turns_write_does_no_index_work_and_a_search_still_finds_it(store: SQLiteStore) -> None:
    store.ensure_session("default", "s", source="api")
    store.append_messages(
        "default", "s", [NewMessage("user", "my kettle is blue"), NewMessage("assistant", "noted")]
    )
    upto, last = waiting(store.connection)
    assert (upto, last, indexed_rows(store)) == (0, 2, 0)  # stored, not indexed
    hits = rank_messages(store.search, "default", "what colour is the kettle")
    assert [h.index for h in hits][:1] == [0]  # the search caught up first
    assert waiting(store.connection) == (2, 2) and indexed_rows(store) == 2
    fts_intact(store)


def test_a_search_sees_messages_another_process_stored(tmp_path: Path) -> None:
    serve, cli = SQLiteStore(tmp_path / "state.db"), SQLiteStore(tmp_path / "state.db")
    try:
        serve.ensure_session("default", "s", source="api")
        serve.append_messages(
            "default", "s", [NewMessage("user", "the spare key is under the mat")]
        )
        hits = rank_messages(cli.search, "default", "where is the spare key")
        assert [h.session_id for h in hits] == ["s"]
        assert serve.search.catch_up() == 0  # the other process indexed it: the mark says so
        fts_intact(serve)
    finally:
        serve.close()
        cli.close()


def test_a_piece_of_catching_up_is_bounded_and_pieces_add_up(store: SQLiteStore) -> None:
    for n in range(5):
        store.ensure_session("default", f"s{n}", source="api")
        store.append_messages(
            "default",
            f"s{n}",
            [NewMessage("user", f"question {n} " * 3), NewMessage("assistant", f"answer {n}")],
        )
    moved = []
    while True:
        with store.lock:
            store.connection.execute("BEGIN IMMEDIATE")
            step = catch_up(store.connection, most=3)
            store.connection.execute("COMMIT")
        fts_intact(store)
        if not step:
            break
        moved.append(step)
    assert moved == [3, 3, 3, 1]
    assert indexed_windows(store) == expected_windows(store)


async def test_the_writer_catches_up_when_it_has_nothing_else_to_do(store: SQLiteStore) -> None:
    store.ensure_session("default", "s", source="api")
    for n in range(3):  # fewer than DUE_AT: due once the writer has been idle a while
        await store.group_commit.run(
            lambda n=n: store.append_messages("default", "s", [NewMessage("user", f"turn {n}")])
        )
    deadline = time.monotonic() + 5
    while waiting(store.connection)[0] < 3:
        assert time.monotonic() < deadline, "the writer never caught up"
        await asyncio.sleep(0.02)
    assert indexed_rows(store) == 3
    fts_intact(store)


async def test_a_writer_that_cannot_catch_up_keeps_serving_and_tries_again(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.ensure_session("default", "s", source="api")
    store.append_messages("default", "s", [NewMessage("user", f"turn {n}") for n in range(40)])
    store.connection.execute("PRAGMA busy_timeout = 50")
    monkeypatch.setattr("hermes.store.index_backlog.RETRY_AFTER_S", 0.1)
    with closing(sqlite3.connect(store.path, timeout=0)) as other:
        other.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
        assert await store.group_commit.run(lambda: "served") == "served"  # wakes the writer
        deadline = time.monotonic() + 5
        while "could not catch up" not in caplog.text:
            assert time.monotonic() < deadline, "the writer never tried"
            await asyncio.sleep(0.02)
        assert await store.group_commit.run(lambda: "still served") == "still served"
        other.execute("ROLLBACK")
    deadline = time.monotonic() + 5
    while waiting(store.connection)[0] < 40:  # and the index caught up after all
        assert time.monotonic() < deadline, "the writer gave up catching up"
        await asyncio.sleep(0.05)
    fts_intact(store)


def test_an_old_database_keeps_its_index_and_new_turns_wait(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    old = SQLiteStore(path, migrations=[m for m in MIGRATIONS if m.version <= 22])
    old.ensure_session("default", "s", source="api")
    old.append_messages("default", "s", [NewMessage("user", "we adopted a beagle")])
    old.close()
    new = SQLiteStore(path)
    try:
        assert waiting(new.connection) == (1, 1)  # all indexed by the old triggers
        assert (
            new.connection.execute(
                "SELECT name FROM sqlite_master WHERE name = 'search_index_paused'"
            ).fetchall()
            == []
        )
        new.append_messages("default", "s", [NewMessage("assistant", "a lovely dog")])
        assert waiting(new.connection) == (1, 2)
        fts_intact(new)
        hits = rank_messages(new.search, "default", "what dog did we adopt")
        assert {h.index for h in hits} == {0, 1}
        assert indexed_windows(new) == expected_windows(new)
    finally:
        new.close()


def test_rebuilding_indexes_the_waiting_messages_too(store: SQLiteStore) -> None:
    store.ensure_session("default", "s", source="api")
    store.append_messages("default", "s", [NewMessage("user", "alpha"), NewMessage("user", "beta")])
    assert store.search.rebuild_search_index() == 2
    assert waiting(store.connection) == (2, 2)
    assert indexed_windows(store) == expected_windows(store)
    fts_intact(store)


_TEXTS = st.sampled_from(["", "apple pie", "blue kettle", "red door", None])
_ROLES = st.sampled_from(["user", "assistant", "tool"])
_STEPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"), st.integers(0, 2), st.lists(st.tuples(_ROLES, _TEXTS), max_size=3)
        ),
        st.tuples(st.just("edit"), st.integers(0, 30), _TEXTS),
        st.tuples(st.just("delete"), st.integers(0, 30)),
        st.tuples(st.just("drop_session"), st.integers(0, 2)),
        st.tuples(
            st.just("import"), st.integers(0, 99), st.lists(st.tuples(_ROLES, _TEXTS), max_size=3)
        ),
        st.tuples(st.just("catch_up"), st.integers(1, 4)),
    ),
    max_size=25,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_STEPS)
def test_the_index_never_drifts_whatever_happens_while_messages_wait(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple]
) -> None:
    """Appends, edits and deletes of waiting and indexed messages, whole sessions dropped,
    imports and partial catch-ups in any order: FTS5's check passes after every step, and
    once caught up the windows are exactly those the messages make."""
    store = SQLiteStore(tmp_path_factory.mktemp("drift") / "state.db")
    try:
        for step in steps:
            kind = step[0]
            ids = [r[0] for r in store.connection.execute("SELECT id FROM messages ORDER BY id")]
            if kind == "append":
                session = f"s{step[1]}"
                store.ensure_session("default", session, source="api")
                store.append_messages(
                    "default", session, [NewMessage(role, text) for role, text in step[2]]
                )
            elif kind == "edit" and ids:
                edit_message(store, "default", ids[step[1] % len(ids)], step[2])
            elif kind == "delete" and ids:
                delete_message(store, "default", ids[step[1] % len(ids)])
            elif kind == "drop_session":
                store.delete_session("default", f"s{step[1]}")
            elif kind == "import":
                messages = [NewMessage(role, text) for role, text in step[2]]
                store.import_sessions("default", [NewSession(f"i{step[1]}", "import", messages)])
            elif kind == "catch_up":
                with store.lock:
                    store.connection.execute("BEGIN IMMEDIATE")
                    catch_up(store.connection, most=step[1])
                    store.connection.execute("COMMIT")
            fts_intact(store)
        store.search.catch_up()
        fts_intact(store)
        assert indexed_windows(store) == expected_windows(store)
    finally:
        store.close()


def test_a_search_that_cannot_catch_up_searches_what_is_indexed(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.ensure_session("default", "s", source="api")
    store.append_messages("default", "s", [NewMessage("user", "the red door squeaks")])
    store.search.catch_up()
    store.append_messages("default", "s", [NewMessage("user", "the red bike is new")])
    store.connection.execute("PRAGMA busy_timeout = 50")
    with closing(sqlite3.connect(store.path, timeout=0)) as other:
        other.execute("BEGIN IMMEDIATE")  # another process is writing, for long
        hits = rank_messages(store.search, "default", "red")
        other.execute("ROLLBACK")
    assert [h.index for h in hits] == [0]  # no error: the indexed part, the newest waits
    assert "cannot catch up" in caplog.text
    assert {h.index for h in rank_messages(store.search, "default", "red")} == {0, 1}
    fts_intact(store)


async def test_turns_a_previous_run_left_waiting_are_indexed_by_the_next_writer(
    tmp_path: Path,
) -> None:
    first = SQLiteStore(tmp_path / "state.db")
    first.ensure_session("default", "s", source="api")
    first.append_messages("default", "s", [NewMessage("user", f"turn {n}") for n in range(40)])
    first.close()  # stopped before its writer was idle: 40 messages wait
    second = SQLiteStore(tmp_path / "state.db")
    try:
        assert waiting(second.connection) == (0, 40)
        await second.group_commit.run(lambda: None)  # the next run's first write
        deadline = time.monotonic() + 5
        while waiting(second.connection)[0] < 40:
            assert time.monotonic() < deadline, "the leftovers were never indexed"
            await asyncio.sleep(0.02)
        fts_intact(second)
    finally:
        second.close()
