"""What tests do to a store besides what Hermes does through it.

No Hermes path edits or deletes one stored message, so a test that checks the search indexes
follow such a change (the triggers' job, for a person or a tool editing state.db) writes the row
with SQL of its own. A lease is taken the way a turn takes it (`begin_turn`), for a holder the
test names: another process, a dead one, a host far away."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from hermes.store.base import Lease, Store
from hermes.store.sqlite import SQLiteStore


def _write(store: SQLiteStore, sql: str, params: tuple[object, ...]) -> None:
    with closing(sqlite3.connect(store.path, timeout=10)) as conn, conn:
        conn.execute(sql, params)


def edit_message(store: SQLiteStore, scope: str, message_id: int, content: str | None) -> None:
    _write(
        store,
        "UPDATE messages SET content = ? WHERE scope = ? AND id = ?",
        (content, scope, message_id),
    )


def delete_message(store: SQLiteStore, scope: str, message_id: int) -> None:
    _write(store, "DELETE FROM messages WHERE scope = ? AND id = ?", (scope, message_id))


def take_lease(store: Store, name: str, holder: str, ttl_seconds: float) -> bool:
    """Take the lease `session:<scope>:<id>` for `holder` as a turn would; False while busy."""
    scope, session = name.removeprefix("session:").rsplit(":", 1)
    lease = Lease(name, holder)
    taken = store.begin_turn(scope, session, source="api", lease=lease, ttl_seconds=ttl_seconds)
    return taken is not None
