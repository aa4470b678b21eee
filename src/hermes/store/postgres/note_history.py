"""PostgreSQL side of the `NoteHistoryStore` contract: the versions every replica sees.

Same rows and SQL as SQLite's (`hermes.store.note_history`), `%s` placeholders."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hermes.store.note_history import Execute, SqlNoteHistory

if TYPE_CHECKING:  # pool.py imports the schema, which imports this module
    from hermes.store.postgres.pool import Database

M007_NOTE_VERSIONS = """
CREATE TABLE note_versions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope text NOT NULL,
    target text NOT NULL,
    actor text NOT NULL,
    at double precision NOT NULL,
    before text NOT NULL,
    after text NOT NULL,
    reason text,
    session_id text,
    turn integer,
    key_name text,
    reverts bigint
);
CREATE INDEX note_versions_target ON note_versions (scope, target, id);
"""


class PgNoteHistory(SqlNoteHistory):
    """Versions in the shared database."""

    placeholder = "%s"

    def __init__(self, db: Database) -> None:
        self._db = db

    @contextmanager
    def _transaction(self) -> Iterator[Execute]:
        with self._db.transaction() as conn:
            yield conn.execute  # type: ignore[misc]

    def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._db.fetch(sql, params)
