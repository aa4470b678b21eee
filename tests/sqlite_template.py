"""A new SQLite state database copied from one migrated once per test process, instead of
migrated again in every test (sixteen migrations, each its own transaction: most of what
opening a store costs, paid by nearly every test).

The copy is SQLite's own backup of a database the real migrations made, so a test sees the
schema it would have had; a database that is not empty, or a store opened with migrations
of its own, is migrated for real.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import hermes.store.sqlite as sqlite_store
from hermes.store.migrations import MIGRATIONS, Migration

Migrate = Callable[[sqlite3.Connection, "list[Migration] | None"], list[int]]

_lock = threading.Lock()  # two stores opening one new file: the second sees it migrated


def make_template(path: Path) -> Path:
    """A database at `path` migrated by the real code (a store opened and closed)."""
    sqlite_store.SQLiteStore(path).close()
    return path


def copying_migrate(template: Path, real: Migrate) -> Migrate:
    """`migrate` that copies `template` into an empty database migrated from scratch."""

    def migrate(conn: sqlite3.Connection, migrations: list[Migration] | None = None) -> list[int]:
        if migrations is not None and migrations is not MIGRATIONS:
            return real(conn, migrations)
        with _lock:
            if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                return real(conn, migrations)
            source = sqlite3.connect(template)
            try:
                source.backup(conn)
            finally:
                source.close()
        return sorted(m.version for m in MIGRATIONS)  # what the real one applies to a new file

    return migrate


def install(monkeypatch: pytest.MonkeyPatch, template: Path) -> None:
    monkeypatch.setattr(sqlite_store, "migrate", copying_migrate(template, sqlite_store.migrate))
