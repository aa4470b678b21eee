"""The cheap store health /health/detailed (and so the dashboard's Status page) runs: the
search index's rows are counted from small indexes, never by reading every message's text."""

from __future__ import annotations

from pathlib import Path

from hermes.store.base import NewMessage
from hermes.store.sqlite import SQLiteStore
from hermes.store.sqlite_health import SEARCHABLE_COUNT


def test_counting_the_searchable_messages_reads_only_an_index(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "state.db")
    try:
        store.ensure_session("default", "s", source="api")
        store.append_messages(
            "default",
            "s",
            [NewMessage("user", "hello"), NewMessage("assistant", ""), NewMessage("tool", "x")],
        )
        store.connection.execute("ANALYZE")  # stats that favour a table scan: still the index
        plan = " ".join(
            str(row[-1])
            for row in store.connection.execute(f"EXPLAIN QUERY PLAN {SEARCHABLE_COUNT}")
        )
        assert "INDEX messages_searchable" in plan, plan
        count = store.connection.execute(SEARCHABLE_COUNT)
        assert count.fetchone()[0] == 0  # waiting for the index: not counted as missing
        assert store.health(deep=False)["search_index"] == "ok"
        store.search.catch_up()
        exact = store.connection.execute("SELECT count(*) FROM message_exact").fetchone()[0]
        assert store.connection.execute(SEARCHABLE_COUNT).fetchone()[0] == exact == 1
        health = store.health(deep=False)
        assert health["search_index"] == "ok" and health["ok"]
        assert store.count_search_index().rows == 1  # the empty answer and the tool are not
    finally:
        store.close()
