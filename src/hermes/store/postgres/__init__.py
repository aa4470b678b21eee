"""The PostgreSQL backend (extra `postgres`): several `hermes serve` replicas share it."""

from hermes.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
