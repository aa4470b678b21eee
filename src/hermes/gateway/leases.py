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
from typing import Any

from pydantic import SecretStr

from hermes.config.settings import Settings
from hermes.store.base import Store
from hermes.store.leases import new_holder

log = logging.getLogger(__name__)

GATEWAY_LEASE_SECONDS = 10.0


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

    async def acquire(self) -> None:
        """Wait until this process holds the lease."""
        while True:
            if await asyncio.to_thread(self.store.acquire_lock, self.name, self.holder, self.ttl):
                break
            await asyncio.sleep(self.ttl / 5)  # polling the database: nothing to wait on here
        log.info("gateway: took the lease %s", self.name)

    async def hold(self) -> None:
        """Renew the lease until cancelled; returns when it was lost (another replica took
        it after a renewal came too late, or the database said no)."""
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                held = await asyncio.to_thread(
                    self.store.renew_lock, self.name, self.holder, self.ttl
                )
            except Exception as exc:  # the database is away: polling on could double up
                log.warning("gateway: renewing the lease %s failed: %s", self.name, exc)
                held = False
            if not held:
                log.warning("gateway: lost the lease %s; standing by", self.name)
                return

    async def release(self) -> None:
        try:
            await asyncio.to_thread(self.store.release_lock, self.name, self.holder)
        except Exception as exc:  # it expires on its own
            log.warning("gateway: releasing the lease %s failed: %s", self.name, exc)
