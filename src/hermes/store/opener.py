"""Open the store a database URL names: the one place that picks a backend."""

from __future__ import annotations

from pathlib import Path

from hermes.store.base import Store, StoreError
from hermes.store.urls import backend_of, sqlite_path

POSTGRES_EXTRA = "pip install 'hermes-agent-server[postgres]'"


def open_store(url: str, *, home: Path | None = None, pool_size: int = 10) -> Store:
    """A `Store` for `url` (`sqlite:///…` or `postgresql://…`), migrated to the current schema."""
    if backend_of(url) == "sqlite":
        from hermes.store.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url, home))
    raise StoreError(
        "store.url names a PostgreSQL database, but this build of Hermes has no PostgreSQL "
        "store yet; use sqlite:///<path> (the default) for now"
    )
