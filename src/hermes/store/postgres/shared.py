"""Shared state in PostgreSQL: the documents (notes, cron jobs, run outputs) every replica
sees. An edit locks its document with a transaction-level advisory lock on (scope, name),
which works before the row exists; the lock ends with the transaction, also when the
process dies, so a killed replica never leaves a document locked.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from hermes.store.base import DocumentEdit

if TYPE_CHECKING:
    from hermes.store.postgres.pool import Database

_LOCK_KEY = "hashtextextended(%s || chr(31) || %s, 0)"


class PgDocuments:
    """`DocumentStore` over the `documents` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def read_document(self, scope: str, name: str) -> str | None:
        rows = self._db.fetch(
            "SELECT content FROM documents WHERE scope = %s AND name = %s", (scope, name)
        )
        return str(rows[0][0]) if rows else None

    @contextlib.contextmanager
    def edit_document(
        self, scope: str, name: str, *, skip_locked: bool = False
    ) -> Iterator[DocumentEdit | None]:
        with self._db.transaction() as conn:
            if skip_locked:
                row = conn.execute(
                    f"SELECT pg_try_advisory_xact_lock({_LOCK_KEY})", (scope, name)
                ).fetchone()
                if not (row and row[0]):
                    yield None
                    return
            else:
                conn.execute(f"SELECT pg_advisory_xact_lock({_LOCK_KEY})", (scope, name))
            found = conn.execute(
                "SELECT content FROM documents WHERE scope = %s AND name = %s", (scope, name)
            ).fetchone()
            edit = DocumentEdit(scope, name, str(found[0]) if found else None)
            yield edit
            if edit.new_text is not None and edit.new_text != edit.text:
                conn.execute(
                    "INSERT INTO documents (scope, name, content, updated_at) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (scope, name) DO UPDATE "
                    "SET content = excluded.content, updated_at = excluded.updated_at",
                    (scope, name, edit.new_text, time.time()),
                )

    def list_documents(self, scope: str, prefix: str) -> list[str]:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._db.fetch(
            "SELECT name FROM documents WHERE scope = %s AND name LIKE %s ORDER BY name",
            (scope, pattern),
        )
        return [str(r[0]) for r in rows]

    def delete_documents(self, scope: str, names: Sequence[str]) -> int:
        if not names:
            return 0
        with self._db.connection() as conn:
            cur = conn.execute(
                "DELETE FROM documents WHERE scope = %s AND name = ANY(%s)", (scope, list(names))
            )
            return cur.rowcount

    def document_scopes(self, name: str) -> list[str]:
        rows = self._db.fetch("SELECT scope FROM documents WHERE name = %s ORDER BY scope", (name,))
        return [str(r[0]) for r in rows]
