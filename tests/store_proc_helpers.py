"""Code run in child processes by the store's cross-process tests (importable by `spawn`)."""

from __future__ import annotations

from typing import Any

from hermes.store.base import StoreError
from hermes.store.sqlite import SQLiteStore


def open_after_barrier(path: str, barrier: Any, out: Any) -> None:
    """Wait for the sibling processes, then open (create and migrate) the same database."""
    barrier.wait(30)
    try:
        store = SQLiteStore(path)
        store.ensure_session("default", "s1", source="cli")
        store.close()
        out.put("ok")
    except StoreError as exc:
        out.put(str(exc))
