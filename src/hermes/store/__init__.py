"""Durable state behind the `Store` contract; `open_store(url)` picks the backend."""

from hermes.store.base import (
    DEFAULT_SCOPE,
    Compaction,
    CompactionStore,
    Lease,
    MessageRecord,
    NewMessage,
    NewSession,
    SessionRecord,
    Store,
    StoreError,
)
from hermes.store.opener import open_store
from hermes.store.sqlite import SQLiteStore

__all__ = [
    "DEFAULT_SCOPE",
    "Compaction",
    "CompactionStore",
    "Lease",
    "MessageRecord",
    "NewMessage",
    "NewSession",
    "SQLiteStore",
    "SessionRecord",
    "Store",
    "StoreError",
    "open_store",
]
