"""Durable state behind the `Store` contract; `open_store(url)` picks the backend."""

from hermes.store.base import (
    DEFAULT_SCOPE,
    Compaction,
    CompactionStore,
    Lease,
    MessageRecord,
    NewMessage,
    NewSession,
    Searcher,
    SearchIndexHealth,
    SearchView,
    SessionRecord,
    Store,
    StoreError,
    TextMatch,
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
    "SearchIndexHealth",
    "SearchView",
    "Searcher",
    "SessionRecord",
    "Store",
    "StoreError",
    "TextMatch",
    "open_store",
]
