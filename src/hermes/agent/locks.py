"""One turn per session at a time: an in-process asyncio lock plus a cross-process store lease."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from hermes.store.base import Store

LEASE_SECONDS = 900.0
POLL_SECONDS = 0.05


class SessionBusyError(Exception):
    """Another process held the session for longer than we were willing to wait."""


class SessionLocks:
    """Serialises turns per (scope, session); waiters queue in arrival order."""

    def __init__(self, store: Store, *, wait_seconds: float = 600.0) -> None:
        self._store = store
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._holder = f"{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wait_seconds = wait_seconds

    def _lock_for(self, key: tuple[str, str]) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock

    @asynccontextmanager
    async def hold(self, scope: str, session_id: str) -> AsyncIterator[None]:
        key = (scope, session_id)
        lock = self._lock_for(key)
        async with lock:
            name = f"session:{scope}:{session_id}"
            await self._acquire_lease(name)
            try:
                yield
            finally:
                await asyncio.to_thread(self._store.release_lock, name, self._holder)

    async def _acquire_lease(self, name: str) -> None:
        deadline = time.monotonic() + self._wait_seconds
        while not await asyncio.to_thread(
            self._store.acquire_lock, name, self._holder, LEASE_SECONDS
        ):
            if time.monotonic() > deadline:
                raise SessionBusyError(f"{name} is busy in another Hermes process")
            await asyncio.sleep(POLL_SECONDS)
