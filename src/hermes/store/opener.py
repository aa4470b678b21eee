"""Open the store a database URL names: the one place that picks a backend."""

from __future__ import annotations

from pathlib import Path

from hermes.store.base import Store, StoreError
from hermes.store.urls import backend_of, sqlite_path

POSTGRES_EXTRA = "pip install 'hermes-agent-server[postgres]'"


def open_store(
    url: str, *, home: Path | None = None, pool_size: int = 10, migrate: bool = True
) -> Store:
    """A `Store` for `url` (`sqlite:///…` or `postgresql://…`); with `migrate` (the default)
    brought to the current schema first, else opened as it is (`hermes db status`)."""
    if backend_of(url) == "sqlite":
        from hermes.store.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url, home), migrations=None if migrate else [])
    try:
        from hermes.store.postgres import PostgresStore
    except ImportError as exc:
        if not (exc.name or "").startswith("psycopg"):
            raise
        raise StoreError(
            f"store.url is a PostgreSQL database but its driver is not installed ({exc.name}); "
            f"run: {POSTGRES_EXTRA}"
        ) from None
    return PostgresStore(url, pool_size=pool_size, migrate=migrate)
