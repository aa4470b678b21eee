"""The SQLite template every test's new store is copied from (tests/sqlite_template.py) has
the schema the real migrations make, and leaves alone what it must not copy over."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import hermes.store.sqlite as sqlite_store
from hermes.store.migrations import MIGRATIONS, migrate
from hermes.store.sqlite import SQLiteStore


def _schema(path: Path) -> list[tuple[str, str, str | None]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        conn.close()


def _versions(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    finally:
        conn.close()


def test_a_copied_store_has_the_schema_the_migrations_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sqlite_store.migrate is not migrate  # this test's stores are copies
    copied = SQLiteStore(tmp_path / "copied.db")
    copied.close()
    monkeypatch.setattr(sqlite_store, "migrate", migrate)
    real = SQLiteStore(tmp_path / "real.db")
    real.close()
    assert _schema(tmp_path / "copied.db") == _schema(tmp_path / "real.db")
    assert _versions(tmp_path / "copied.db") == sorted(m.version for m in MIGRATIONS)
    conn = sqlite3.connect(tmp_path / "copied.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_a_database_with_tables_or_its_own_migrations_is_migrated_for_real(
    tmp_path: Path,
) -> None:
    path = tmp_path / "older.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, MIGRATIONS[:3])  # a database an older Hermes left
    conn.execute("CREATE TABLE kept (x)")
    conn.close()
    SQLiteStore(path).close()
    assert _versions(path) == sorted(m.version for m in MIGRATIONS)
    assert "kept" in [name for _, name, _ in _schema(path)]

    only_first = [MIGRATIONS[0]]
    store = SQLiteStore(tmp_path / "first.db", migrations=only_first)
    store.close()
    assert _versions(tmp_path / "first.db") == [MIGRATIONS[0].version]
