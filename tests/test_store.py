import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from types import ModuleType

import pytest

from hermes.store.base import Lease, NewMessage, StoreError
from hermes.store.migrations import MIGRATIONS, current_version
from hermes.store.sqlite import SQLiteStore
from tests.store_edits import delete_message, edit_message, take_lease


@pytest.fixture
def store(tmp_path: Path):
    s = SQLiteStore(tmp_path / "state.db")
    yield s
    s.close()


def _fts_ids(store: SQLiteStore, word: str) -> list[int]:
    """Messages holding `word` in every view that indexes it (each kept in sync alike)."""
    found = [
        sorted(m.message_id for m in store.search.match_messages("default", [word], view=view))
        for view in ("message", "exact", "window")
    ]
    assert found[0] == found[1], found
    return found[0]


def test_wal_and_schema_version(store: SQLiteStore) -> None:
    health = store.health()
    assert health["ok"] and health["journal_mode"] == "wal"
    assert health["schema_version"] == MIGRATIONS[-1].version


def test_migrates_an_old_schema_keeping_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = SQLiteStore(path, migrations=MIGRATIONS[:1])
    assert current_version(old.connection) == 1
    old.connection.execute(
        "INSERT INTO sessions (scope, id, source, started_at, updated_at) VALUES ('default','s1','cli',1,1)"
    )
    old.connection.execute(
        "INSERT INTO messages (scope, session_id, idx, role, content, timestamp) "
        "VALUES ('default','s1',0,'user','remember the blue kettle',1)"
    )
    old.connection.execute("UPDATE sessions SET message_count = 1")
    old.close()
    new = SQLiteStore(path)
    assert current_version(new.connection) == MIGRATIONS[-1].version
    session = new.get_session("default", "s1")
    assert session is not None and session.system_prompt is None
    assert [m.content for m in new.get_messages("default", "s1")] == ["remember the blue kettle"]
    assert new.search.match_messages("default", ["kettle"])[0].session_id == "s1"
    assert new.search.check_search_index().ok
    new.close()


def test_fts_follows_insert_update_delete(store: SQLiteStore) -> None:
    store.ensure_session("default", "s", source="cli")
    [a, b] = store.append_messages(
        "default", "s", [NewMessage("user", "the zebra sleeps"), NewMessage("assistant", "ok")]
    )
    assert _fts_ids(store, "zebra") == [a.id]
    edit_message(store, "default", a.id, "the giraffe sleeps")
    assert _fts_ids(store, "zebra") == [] and _fts_ids(store, "giraffe") == [a.id]
    delete_message(store, "default", a.id)
    assert _fts_ids(store, "giraffe") == []
    store.delete_session("default", "s")
    assert store.count_messages() == 0 and _fts_ids(store, "ok") == []


def test_search_is_confined_to_scope_and_stems(store: SQLiteStore) -> None:
    for scope in ("default", "user:bob"):
        store.ensure_session(scope, "chat-1", source="api")
        store.append_messages(
            scope, "chat-1", [NewMessage("user", f"{scope} is running marathons")]
        )
    for view in ("message", "window"):
        hits = store.search.match_messages("user:bob", ["run", "marathon"], view=view)
        assert [h.session_id for h in hits] == ["chat-1"]
        assert hits[0].source == "api" and hits[0].role == "user"
    snippets = store.search.message_snippets("user:bob", ["marathon"], [hits[0].message_id])
    assert "user:bob" in snippets[hits[0].message_id]
    assert "[marathons]" in snippets[hits[0].message_id]
    assert store.search.match_messages("user:bob", ["run"], view="exact") == []  # word forms kept
    assert store.search.match_messages("user:carol", ["marathon"]) == []
    assert store.search.message_snippets("user:carol", ["marathon"], [hits[0].message_id]) == {}


def test_append_requires_session_and_is_all_or_nothing(store: SQLiteStore) -> None:
    with pytest.raises(StoreError):
        store.append_messages("default", "missing", [NewMessage("user", "x")])
    store.ensure_session("default", "s", source="cli")
    with pytest.raises(sqlite3.IntegrityError):
        store.append_messages("default", "s", [NewMessage("user", "fine"), NewMessage(None, "bad")])  # type: ignore[arg-type]
    assert store.get_messages("default", "s") == []


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    stores = [SQLiteStore(path) for _ in range(4)]
    stores[0].ensure_session("default", "s", source="cli")

    def writer(s: SQLiteStore, n: int) -> None:
        for i in range(50):
            s.append_messages("default", "s", [NewMessage("user", f"w{n}-{i}")])

    threads = [threading.Thread(target=writer, args=(s, n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    messages = stores[0].get_messages("default", "s")
    assert len(messages) == 200
    assert [m.index for m in messages] == list(range(200))
    for s in stores:
        s.close()


def test_locks_are_exclusive_until_released_or_expired(store: SQLiteStore) -> None:
    x = "session:default:x"
    assert take_lease(store, x, "a", 60)
    assert not take_lease(store, x, "b", 60)
    store.release_lock(x, "a")
    assert take_lease(store, x, "b", 0.0)
    assert take_lease(store, x, "a", 60)  # b's lease had already expired


def _lease_rows(store: SQLiteStore) -> list[tuple[str, str]]:
    return store.connection.execute("SELECT name, holder FROM locks").fetchall()


def test_begin_turn_takes_the_lease_and_creates_the_session_in_one_write(tmp_path: Path) -> None:
    mine, theirs = SQLiteStore(tmp_path / "state.db"), SQLiteStore(tmp_path / "state.db")
    writes: list[str] = []
    mine.connection.set_trace_callback(
        lambda sql: writes.append(sql) if sql.startswith("BEGIN") else None
    )
    session = mine.begin_turn("default", "s", source="api", lease=Lease("n", "a"), ttl_seconds=60)
    assert session is not None and session.source == "api" and session.message_count == 0
    assert writes == ["BEGIN IMMEDIATE"]
    assert _lease_rows(mine) == [("n", "a")]
    # another process is told "busy" and neither takes the lease nor touches the session
    assert (
        theirs.begin_turn("default", "s", source="cron", lease=Lease("n", "b"), ttl_seconds=60)
        is None
    )
    assert theirs.get_session("default", "s").source == "api"
    again = mine.begin_turn("default", "s", source="cron", lease=Lease("n", "a"), ttl_seconds=60)
    assert again is not None and again.source == "api"  # ours already; the session is kept
    mine.close()
    theirs.close()


def test_append_releases_the_lease_in_its_own_transaction(tmp_path: Path) -> None:
    mine, theirs = SQLiteStore(tmp_path / "state.db"), SQLiteStore(tmp_path / "state.db")
    lease = Lease("session:default:s", "a")
    assert mine.begin_turn("default", "s", source="api", lease=lease, ttl_seconds=60) is not None
    writes: list[str] = []
    mine.connection.set_trace_callback(
        lambda sql: writes.append(sql) if sql.startswith("BEGIN") else None
    )
    records = mine.append_messages(
        "default", "s", [NewMessage("user", "hi")], system_prompt="frozen", release=lease
    )
    assert [r.index for r in records] == [0] and writes == ["BEGIN IMMEDIATE"]
    assert _lease_rows(mine) == []
    taken = theirs.begin_turn(
        "default", "s", source="api", lease=Lease(lease.name, "b"), ttl_seconds=60
    )
    assert taken is not None and taken.system_prompt == "frozen" and taken.message_count == 1
    # a system prompt is set once: a later one does not replace the frozen one
    theirs.append_messages("default", "s", [NewMessage("user", "x")], system_prompt="other")
    assert theirs.get_session("default", "s").system_prompt == "frozen"
    mine.close()
    theirs.close()


def test_a_failed_append_keeps_the_lease(store: SQLiteStore) -> None:
    lease = Lease("n", "a")
    assert store.begin_turn("default", "s", source="api", lease=lease, ttl_seconds=60) is not None
    with pytest.raises(sqlite3.IntegrityError):
        store.append_messages("default", "s", [NewMessage(None, "bad")], release=lease)  # type: ignore[arg-type]
    assert _lease_rows(store) == [("n", "a")]
    store.append_messages("default", "s", [], release=lease)  # nothing to store still releases
    assert _lease_rows(store) == []


def test_processes_opening_a_fresh_database_at_once_all_succeed(tmp_path: Path) -> None:
    """serve, cron and the CLI may create state.db together; none may fail with 'locked'."""
    import multiprocessing

    from tests.store_proc_helpers import open_after_barrier

    ctx = multiprocessing.get_context("spawn")
    for round_ in range(6):
        path = str(tmp_path / f"round{round_}" / "state.db")
        barrier, out = ctx.Barrier(4), ctx.Queue()
        procs = [
            ctx.Process(target=open_after_barrier, args=(path, barrier, out)) for _ in range(4)
        ]
        for proc in procs:
            proc.start()
        results = [out.get(timeout=60) for _ in procs]
        for proc in procs:
            proc.join(10)
        assert results == ["ok"] * 4
        with closing(sqlite3.connect(path)) as conn:
            assert current_version(conn) == MIGRATIONS[-1].version


def test_cjk_is_found_through_trigrams_and_stays_in_scope(store: SQLiteStore) -> None:
    for scope, text in (("default", "我们下周去京都旅行"), ("user:x", "京都旅行的计划")):
        store.ensure_session(scope, "s", source="cli")
        store.append_messages(scope, "s", [NewMessage("user", text), NewMessage("user", "ok")])
    hits = store.search.match_messages("default", ["京都旅行"], view="trigram")
    assert [(h.session_id, h.index) for h in hits] == [("s", 0)]
    assert store.search.match_messages("default", ["京都"], view="trigram") == []  # under 3 chars
    assert len(store.search.match_messages("user:x", ["京都旅行"], view="trigram")) == 1
    assert store.search.check_search_index().ok


def test_damaged_search_index_is_reported_and_rebuilt(store: SQLiteStore) -> None:
    store.ensure_session("default", "s", source="cli")
    store.append_messages("default", "s", [NewMessage("user", "the blue kettle")])
    store.connection.execute(
        "INSERT INTO message_exact_fts (rowid, content, tag) VALUES (999, 'ghost', 'x')"
    )
    health = store.search.check_search_index()
    assert not health.ok and "hermes sessions reindex" in health.detail
    assert store.health()["ok"] is False
    cheap = store.health(deep=False)  # row counts, not FTS5's check: the ghost shows too
    assert cheap["ok"] is False and "message_exact_fts holds 2 rows" in cheap["search_index"]
    assert store.search.rebuild_search_index() == 1
    assert store.search.check_search_index().ok and store.health()["search_index"] == "ok"
    assert store.health(deep=False)["search_index"] == "ok"
    assert [m.index for m in store.search.match_messages("default", ["kettle"], view="exact")] == [
        0
    ]


def _hello_in_nine_rows(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """ "hello" in 9 rows (common: over COMMON_ROWS = 3), "zebra" in 2; the index module."""
    import hermes.store.search_index as index

    monkeypatch.setattr(index, "COMMON_ROWS", 3)
    store.ensure_session("default", "s", source="cli")
    texts = [f"hello number {i}" for i in range(8)] + ["zebra", "hello zebra"]
    store.append_messages("default", "s", [NewMessage("user", t) for t in texts])
    return index


def test_common_words_do_not_pick_candidates(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word found in very many rows does not make BM25 score them all: rarer words pick."""
    _hello_in_nine_rows(store, monkeypatch)
    hits = store.search.match_messages("default", ["hello", "zebra"], view="message")
    assert sorted(h.index for h in hits) == [8, 9]  # "hello"-only rows left out
    assert len(store.search.match_messages("default", ["hello"], view="message")) == 9  # all common


def test_a_word_found_common_is_not_counted_again_for_a_while(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a common word's rows walks COMMON_ROWS of them: the verdict is kept (for
    COMMON_TTL_S), a rare word's is not (it may become common as messages arrive)."""
    index = _hello_in_nine_rows(store, monkeypatch)
    counts: list[str] = []

    def counted(sql: str) -> None:
        if sql.startswith("SELECT COUNT(*) FROM (SELECT rowid"):
            counts.append(sql)

    store.connection.set_trace_callback(counted)
    first = store.search.match_messages("default", ["hello", "zebra"], view="message")
    assert len(counts) == 2  # both words counted
    counts.clear()
    again = store.search.match_messages("default", ["hello", "zebra"], view="message")
    assert [h.index for h in again] == [h.index for h in first]
    assert len(counts) == 1 and "zebra" in counts[0]  # "hello" known to be common
    counts.clear()
    monkeypatch.setattr(index, "COMMON_TTL_S", 0.0)
    store.search.match_messages("default", ["hello", "zebra"], view="message")
    store.connection.set_trace_callback(None)
    assert len(counts) == 2  # expired: counted again
