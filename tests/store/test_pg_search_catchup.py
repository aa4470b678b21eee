"""PostgreSQL's search index catches up with the messages too: a turn's write computes no
search vectors, a background thread indexes what waits, every search (on any replica) first
indexes what its scope has waiting, and replicas catching up at once never leave a window
stale (each session is refreshed under a lock of its own)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from hermes.recall.ranking import rank_messages
from hermes.store import NewMessage, open_store
from hermes.store.postgres import PostgresStore
from hermes.store.postgres.search import PgSearch
from hermes.store.postgres.search_index import anything_waits


@pytest.fixture
def replicas(pg_url: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    one, two = open_store(pg_url), open_store(pg_url)
    assert isinstance(one, PostgresStore) and isinstance(two, PostgresStore)
    yield one, two
    one.close()
    two.close()


def waits(store: PostgresStore, scope: str | None = None) -> bool:
    with store._db.connection() as conn:
        return anything_waits(conn, scope)


def windows(store: PostgresStore) -> list[tuple[int, str]]:
    return [
        (int(r[0]), str(r[1]))
        for r in store._db.fetch("SELECT id, window_vec::text FROM messages ORDER BY id")
    ]


def test_a_turns_write_leaves_the_vectors_and_another_replicas_search_finds_it(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    one, two = replicas
    one._backlog.close()  # no background: what waits stays waiting until the search
    one.ensure_session("default", "s", source="api")
    one.append_messages("default", "s", [NewMessage("user", "my kettle is blue")])
    assert waits(one)  # stored without vectors
    hits = rank_messages(two.search, "default", "what colour is the kettle")
    assert [h.index for h in hits][:1] == [0]  # the search indexed its scope first
    assert not waits(one) and two.search.check_search_index().ok


def test_the_background_indexes_what_waits_without_a_search(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    one, _ = replicas
    one.ensure_session("default", "s", source="api")
    one.append_messages("default", "s", [NewMessage("user", f"turn {n}") for n in range(40)])
    deadline = time.monotonic() + 10
    while waits(one):
        assert time.monotonic() < deadline, "the background never caught up"
        time.sleep(0.05)
    assert one.search.check_search_index().ok


def test_replicas_appending_and_searching_at_once_leave_no_window_stale(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    stores = list(replicas)
    for n in range(4):
        stores[0].ensure_session("default", f"s{n}", source="api")
    errors: list[BaseException] = []

    def talk(k: int) -> None:
        store = stores[k % 2]
        try:
            for turn in range(15):
                session = f"s{(k + turn) % 4}"
                store.append_messages(
                    "default",
                    session,
                    [NewMessage("user", f"w{k} asks {turn}"), NewMessage("assistant", "ok")],
                )
                rank_messages(store.search, "default", f"asks {turn}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=talk, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    stores[1].search.catch_up()
    caught_up = windows(stores[0])
    stores[0].search.rebuild_search_index()  # every window computed afresh, at rest
    assert windows(stores[0]) == caught_up


def test_a_search_with_hits_already_indexed_still_sees_the_waiting_ones(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    """The ranking statement itself tells that the scope has messages waiting (a search
    whose words are found pays no round trip to ask), and the search runs again once they
    are indexed."""
    one, two = replicas
    one._backlog.close()  # no background: what waits stays waiting until the search
    one.ensure_session("default", "s", source="api")
    one.append_messages("default", "s", [NewMessage("user", "the red door squeaks")])
    assert [h.index for h in rank_messages(two.search, "default", "red")] == [0]
    one.append_messages("default", "s", [NewMessage("user", "the red bike is new")])
    assert waits(one, "default")
    assert {h.index for h in rank_messages(two.search, "default", "red")} == {0, 1}
    assert not waits(one, "default")


def test_a_search_whose_waiting_messages_another_replica_indexed_meanwhile_finds_them(
    replicas: tuple[PostgresStore, PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search read the scope while a message waited; before it could index it, another
    replica did. The search still runs again (it was failing: 'nothing left to index' read
    as 'nothing waited')."""
    one, two = replicas
    one.ensure_session("default", "s", source="api")
    one._backlog.close()  # no background here: the race is staged below
    one.append_messages("default", "s", [NewMessage("user", "My name is Alex")])

    def raced(scope: str | None = None) -> int:
        one.search.catch_up(scope)  # another replica gets there first
        return PgSearch.catch_up(two.search, scope)  # nothing left for this one

    monkeypatch.setattr(two.search, "catch_up", raced)
    assert [h.index for h in rank_messages(two.search, "default", "Alex")] == [0]
