"""Durable state: sessions, messages and full-text search behind the `Store` contract."""

from hermes.store.base import (
    DEFAULT_SCOPE,
    MessageRecord,
    NewMessage,
    SearchHit,
    SessionRecord,
    Store,
    StoreError,
)
from hermes.store.sqlite import SQLiteStore

__all__ = [
    "DEFAULT_SCOPE",
    "MessageRecord",
    "NewMessage",
    "SQLiteStore",
    "SearchHit",
    "SessionRecord",
    "Store",
    "StoreError",
]
