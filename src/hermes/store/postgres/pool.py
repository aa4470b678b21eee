"""Connections for the PostgreSQL store: a psycopg pool, errors turned into store errors,
numbered migrations under an advisory lock, and the replica's presence lock.

Every connection problem (server down, restarted, network, pool exhausted) becomes a
`StoreUnavailableError` naming the database without its password; the pool checks a
connection before lending it, so once the server is back the next call simply works.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from hermes.store.base import SchemaStatus, StoreError, StoreUnavailableError
from hermes.store.postgres.schema import MIGRATIONS, PgMigration
from hermes.store.urls import redact

log = logging.getLogger(__name__)

MIGRATION_LOCK = 0x4845524D  # pg_advisory_lock key held while migrating ("HERM")
PRESENCE_NAMESPACE = 0x48525053  # first key of every replica's presence lock ("HRPS")
CONNECT_TIMEOUT_S = 5
EXTENSIONS = ("pg_trgm", "btree_gin")  # what the migrations create (schema.py)
POOL_WAIT_S = 5.0


def libpq_url(url: str) -> str:
    """libpq accepts `postgresql://` and `postgres://` alike; keep the caller's text."""
    return url


class Database:
    """A connection pool to one PostgreSQL database, with errors in the store's terms."""

    def __init__(self, url: str, *, pool_size: int) -> None:
        self.url = url
        self.shown = redact(url)
        self.pool_size = pool_size
        self._pool = ConnectionPool(
            libpq_url(url),
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
            check=ConnectionPool.check_connection,
            timeout=POOL_WAIT_S,
            open=False,
            name="hermes",
        )

    def open(self) -> None:
        """Fail fast with the server's own reason when the database cannot be used at all
        (wrong host, no such database, bad password), then start the pool."""
        try:
            psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S).close()
        except psycopg.Error as exc:
            raise self.unavailable(exc) from None
        self._pool.open(wait=False)

    def unavailable(self, exc: BaseException) -> StoreUnavailableError:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreUnavailableError(
            f"the database {self.shown} cannot be reached ({detail}); Hermes retries on the "
            "next request: check that PostgreSQL is running and store.url is right"
        )

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in autocommit mode (use `conn.transaction()` to group)."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise self.unavailable(exc) from None
        except psycopg.Error as exc:
            if _lost_connection(exc):
                raise self.unavailable(exc) from None
            raise StoreError(f"the database {self.shown} refused an operation: {exc}") from None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self.connection() as conn, conn.transaction():
            yield conn

    def fetch(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        with self.connection() as conn:
            return conn.execute(sql, params).fetchall()

    def pool_stats(self) -> dict[str, int]:
        stats = self._pool.get_stats()
        return {
            "size": stats.get("pool_size", 0),
            "available": stats.get("pool_available", 0),
            "max": self.pool_size,
            "waiting": stats.get("requests_waiting", 0),
        }

    def close(self) -> None:
        self._pool.close()

    # -- migrations -----------------------------------------------------------------------

    def migrate(self, migrations: list[PgMigration] = MIGRATIONS) -> list[int]:
        """Apply every migration not yet recorded, in order, each in its own transaction,
        while holding an advisory lock: replicas starting together migrate once."""
        applied: list[int] = []
        with self.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            try:
                _ensure_schema(conn)
                _ensure_table(conn)
                have = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}
                for migration in sorted(migrations, key=lambda m: m.version):
                    if migration.version in have:
                        continue
                    with conn.transaction():
                        conn.execute(migration.sql.encode())
                        conn.execute(
                            "INSERT INTO schema_migrations (version, name, applied_at) "
                            "VALUES (%s, %s, %s)",
                            (migration.version, migration.name, time.time()),
                        )
                    log.info("database %s: applied migration %s", self.shown, migration.version)
                    applied.append(migration.version)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        return applied

    def schema_status(self) -> SchemaStatus:
        with self.connection() as conn:
            _ensure_table(conn)
            rows = conn.execute(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
            ).fetchall()
        have = {int(r[0]) for r in rows}
        return SchemaStatus(
            backend="postgresql",
            url=self.shown,
            applied=[(int(v), str(n), float(t)) for v, n, t in rows],
            pending=[(m.version, m.name) for m in MIGRATIONS if m.version not in have],
        )


def _lost_connection(exc: psycopg.Error) -> bool:
    """A failure of the connection, not of the statement: no SQLSTATE (the client lost the
    server), class 08 (connection), 57P0x (server shutting down/restarting), 53 (resources)."""
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    return state.startswith(("08", "57P", "53"))


def _ensure_schema(conn: psycopg.Connection[Any]) -> None:
    """A URL whose search_path names a schema of its own first (a named profile sharing the
    database, `hermes.config.database`) gets that schema, and the extensions the tables use
    are put in `public` first, where every schema's search_path finds them."""
    row = conn.execute("SHOW search_path").fetchone()
    first = str(row[0] if row else "").split(",")[0].strip().strip('"')
    if not first or first in ("$user", "public"):
        return
    for extension in EXTENSIONS:
        conn.execute(
            sql.SQL("CREATE EXTENSION IF NOT EXISTS {} WITH SCHEMA public").format(
                sql.Identifier(extension)
            )
        )
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(first)))


def _ensure_table(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version integer PRIMARY KEY, name text NOT NULL, applied_at double precision NOT NULL)"
    )


class Presence:
    """This process's presence lock: a session-level advisory lock on a connection of its
    own, held while the process lives. PostgreSQL drops it the moment the process dies (its
    connection closes), so leases tagged with `key` are then known to be abandoned."""

    CHECK_EVERY_S = 2.0

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._checked = 0.0
        self.key = random.randint(1, 2**31 - 1)

    def ensure(self) -> int:
        """The presence key, (re)taking the lock if the connection was lost."""
        with self._lock:
            now = time.monotonic()
            if self._conn is not None and not self._conn.closed:
                if now - self._checked < self.CHECK_EVERY_S:
                    return self.key
                try:
                    self._conn.execute("SELECT 1")
                    self._checked = now
                    return self.key
                except psycopg.Error:
                    with contextlib.suppress(psycopg.Error):
                        self._conn.close()
            self._connect()
            self._checked = now
            return self.key

    def _connect(self) -> None:
        try:
            conn = psycopg.connect(
                libpq_url(self._db.url), autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
        except psycopg.Error as exc:
            raise self._db.unavailable(exc) from None
        try:
            for _ in range(8):
                row = conn.execute(
                    "SELECT pg_try_advisory_lock(%s, %s)", (PRESENCE_NAMESPACE, self.key)
                ).fetchone()
                if row and row[0]:
                    self._conn = conn
                    return
                self.key = random.randint(1, 2**31 - 1)
        except psycopg.Error as exc:  # the server went away between connect and lock
            with contextlib.suppress(psycopg.Error):
                conn.close()
            raise self._db.unavailable(exc) from None
        conn.close()
        raise StoreError("could not take a presence lock in the database; try again")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(psycopg.Error):
                    self._conn.close()
                self._conn = None
