"""Durable state: sessions, messages and full-text search behind the `Store` contract."""

from hermes.store.base import (
    DEFAULT_SCOPE,
    MessageRecord,
    NewMessage,
    Searcher,
    SearchIndexHealth,
    SearchView,
    SessionRecord,
    Store,
    StoreError,
    TextMatch,
)
from hermes.store.sqlite import SQLiteStore

__all__ = [
    "DEFAULT_SCOPE",
    "MessageRecord",
    "NewMessage",
    "SQLiteStore",
    "SearchIndexHealth",
    "SearchView",
    "Searcher",
    "SessionRecord",
    "Store",
    "StoreError",
    "TextMatch",
]
