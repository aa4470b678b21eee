"""PostgreSQL for tests: one database per test run (made here, dropped at the end), emptied
before each test that uses it. The server is the machine's (127.0.0.1:5432, trust auth,
user postgres) or the private one scripts/test starts, named by HERMES_TEST_PG_ADMIN_URL."""

from __future__ import annotations

import os
import uuid

import psycopg

ADMIN_URL = os.environ.get(
    "HERMES_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def url_for(database: str) -> str:
    base, _, _ = ADMIN_URL.rpartition("/")
    return f"{base}/{database}"


def create_database(prefix: str = "hermes_test") -> str:
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        raise RuntimeError(
            f"the tests need PostgreSQL at {ADMIN_URL} ({exc}); run them with scripts/test, "
            "which starts a private one when none answers"
        ) from None
    return name


def drop_database(name: str) -> None:
    with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def empty_database(url: str) -> None:
    """Remove every row Hermes wrote (keeps the schema: migrating again costs more)."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename <> 'schema_migrations'"
            )
        ]
        if tables:
            conn.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " CASCADE")
