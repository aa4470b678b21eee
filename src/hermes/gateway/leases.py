"""One poller per platform account across replicas.

A platform that is polled or holds a socket (Telegram long polling, Discord and Slack
sockets, Matrix sync, IMAP) must be read by exactly one process, or two replicas answer the
same message twice (and Telegram refuses a second `getUpdates`). Each account is a store
lease `gateway:<platform>:<account hash>`: the replica that takes it connects and renews it
every `ttl / 3` seconds; the others stand by and try again every `ttl / 5`. When the holder
dies its lease is free at once if the store can tell (PostgreSQL: the replica's presence
lock; the same host: its PID is gone), else when it expires: a takeover within
`ttl + ttl / 5` seconds (12 s with the default 10 s). Webhook platforms (WhatsApp, SMS)
take no lease: any replica accepts their requests.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import SecretStr

from hermes.config.settings import Settings
from hermes.store.base import Store
from hermes.store.leases import new_holder

log = logging.getLogger(__name__)

GATEWAY_LEASE_SECONDS = 10.0
SAFE_FRACTION = 0.8
"""A holder gives up polling when a renewal is not confirmed within this share of the
lease's time, so it has stopped before the lease can expire and pass to another replica."""


def _plain(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def lease_name(settings: Settings, platform: str) -> str:
    """`gateway:<platform>:<hash>`: equal for replicas configured with the same account
    (the hash covers the platform's whole section, credentials included, never shown)."""
    section = _plain(settings.gateway.platform(platform))
    digest = hashlib.sha256(json.dumps(section, sort_keys=True, default=str).encode())
    return f"gateway:{platform}:{digest.hexdigest()[:16]}"


class PollerLease:
    """The lease of one platform account, held by this process while it polls."""

    def __init__(self, store: Store, name: str, *, ttl: float = GATEWAY_LEASE_SECONDS) -> None:
        self.store = store
        self.name = name
        self.ttl = ttl
        self.holder = new_holder()
        self._confirmed = time.monotonic()
        # its own thread: a renewal never queues behind the turns' work in the shared pool
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="gateway-lease")

    async def _call(self, fn: Callable[..., bool | None], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    async def acquire(self) -> None:
        """Wait until this process holds the lease."""
        while True:
            started = time.monotonic()
            if await self._call(self.store.acquire_lock, self.name, self.holder, self.ttl):
                self._confirmed = started
                break
            await asyncio.sleep(self.ttl / 5)  # polling the database: nothing to wait on here
        log.info("gateway: took the lease %s", self.name)

    async def hold(self) -> None:
        """Renew the lease until cancelled; returns when it is lost or may be about to be:
        a renewal refused (another replica has it), failed, or not confirmed within
        `SAFE_FRACTION` of the lease's time since the last one (a slow database or a busy
        process): the caller then stops polling before another replica may start."""
        confirmed = self._confirmed  # when the lease was taken (the loop may start us late)
        while True:
            await asyncio.sleep(self.ttl / 3)
            started = time.monotonic()
            left = confirmed + self.ttl * SAFE_FRACTION - started
            held = False
            if left > 0:
                try:
                    held = await asyncio.wait_for(
                        self._call(self.store.renew_lock, self.name, self.holder, self.ttl),
                        left,
                    )
                except TimeoutError:
                    log.warning("gateway: renewing the lease %s took too long", self.name)
                except Exception as exc:  # the database is away: polling on could double up
                    log.warning("gateway: renewing the lease %s failed: %s", self.name, exc)
            if not held:
                log.warning("gateway: lost the lease %s; standing by", self.name)
                return
            confirmed = started

    async def release(self) -> None:
        try:
            await self._call(self.store.release_lock, self.name, self.holder)
        except Exception as exc:  # it expires on its own
            log.warning("gateway: releasing the lease %s failed: %s", self.name, exc)
        finally:
            self._thread.shutdown(wait=False)
