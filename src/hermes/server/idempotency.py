"""`Idempotency-Key` for non-streaming completions: a retried request gets the first answer.

Entries are keyed by (scope, key), so one user's key can never replay another user's answer.
The same key with the same request (body + session header) within the TTL returns the stored
response without a second turn; concurrent duplicates await one shared computation; the same
key with a different request is a 409. Failures are not remembered: the failed turn stored
nothing, so a retry runs it again.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from hermes.server.errors import APIError
from hermes.store.base import IdempotencyStore, IdempotentAnswer

KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")
HEADER = "idempotency-key"


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: bytes
    headers: dict[str, str]
    replayed: bool = False
    """True when another replica ran the request and this is its stored answer."""


@dataclass
class _Entry:
    fingerprint: str
    created: float
    task: asyncio.Future[StoredResponse]


def _conflict() -> APIError:
    return APIError(
        409,
        "This Idempotency-Key was already used with a different "
        "request; use a new key for a new request.",
        code="idempotency_key_conflict",
        param="Idempotency-Key",
    )


def validate_key(key: str) -> str:
    if not KEY_PATTERN.match(key):
        raise APIError(
            400,
            "Idempotency-Key must be 1–255 visible ASCII characters (no spaces).",
            code="invalid_idempotency_key",
            param="Idempotency-Key",
        )
    return key


def fingerprint(body: bytes, session_id: str | None) -> str:
    digest = hashlib.sha256(body)
    digest.update(b"\0session:" + (session_id or "").encode())
    return digest.hexdigest()


class IdempotencyCache:
    """In-memory, LRU-bounded, TTL-limited; one per app."""

    def __init__(
        self,
        *,
        max_items: int = 1000,
        ttl_seconds: float = 300.0,
        shared: IdempotencyStore | None = None,
    ) -> None:
        self.max_items = max_items
        self.ttl_seconds = ttl_seconds
        self.shared = shared  # the database's keys when several replicas share it
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()

    def forget_scope(self, scope: str) -> int:
        """Drop the scope's remembered answers (a forgotten user); returns how many."""
        slots = [slot for slot in self._entries if slot[0] == scope]
        for slot in slots:
            del self._entries[slot]
        return len(slots)

    def _live(self, slot: tuple[str, str]) -> _Entry | None:
        entry = self._entries.get(slot)
        if entry is None:
            return None
        if time.monotonic() - entry.created > self.ttl_seconds:
            del self._entries[slot]
            return None
        self._entries.move_to_end(slot)
        return entry

    async def run(
        self,
        scope: str,
        key: str,
        print_: str,
        compute: Callable[[], Awaitable[StoredResponse]],
        spawn: Callable[[Awaitable[StoredResponse]], asyncio.Future[StoredResponse]],
    ) -> tuple[StoredResponse, bool]:
        """(response, replayed): replayed is True when this request did not run the turn."""
        slot = (scope, key)
        entry = self._live(slot)
        if entry is not None:
            if entry.fingerprint != print_:
                raise _conflict()
            return await asyncio.shield(entry.task), True
        task = spawn(self._compute(scope, key, print_, compute))
        entry = _Entry(print_, time.monotonic(), task)
        self._entries[slot] = entry
        while len(self._entries) > self.max_items:
            self._entries.popitem(last=False)
        task.add_done_callback(lambda t: self._forget_failure(slot, entry, t))
        response = await asyncio.shield(task)
        return response, response.replayed

    async def _compute(
        self,
        scope: str,
        key: str,
        print_: str,
        compute: Callable[[], Awaitable[StoredResponse]],
    ) -> StoredResponse:
        if self.shared is None:
            return await compute()
        return await run_shared(self.shared, scope, key, print_, self.ttl_seconds, compute)

    def _forget_failure(
        self, slot: tuple[str, str], entry: _Entry, task: asyncio.Future[StoredResponse]
    ) -> None:
        if (task.cancelled() or task.exception() is not None) and self._entries.get(slot) is entry:
            del self._entries[slot]


SHARED_WAIT_SECONDS = 600.0
SHARED_POLL_SECONDS = 0.1


async def run_shared(
    shared: IdempotencyStore,
    scope: str,
    key: str,
    print_: str,
    ttl_seconds: float,
    compute: Callable[[], Awaitable[StoredResponse]],
) -> StoredResponse:
    """Claim the key in the shared database; replay another replica's answer, wait while it
    is still computing, or compute it here and store it (a failure releases the claim)."""
    deadline = time.monotonic() + SHARED_WAIT_SECONDS
    while True:
        state, answer = await asyncio.to_thread(
            shared.claim_idempotency, scope, key, print_, ttl_seconds
        )
        if state == "done" and answer is not None:
            return StoredResponse(answer.status, answer.body, answer.headers, replayed=True)
        if state == "conflict":
            raise _conflict()
        if state == "new":
            break
        if time.monotonic() > deadline:
            raise APIError(
                409,
                "This Idempotency-Key's request is still being answered by another Hermes "
                "replica; retry later.",
                code="idempotency_key_in_use",
                param="Idempotency-Key",
            )
        await asyncio.sleep(SHARED_POLL_SECONDS)
    try:
        response = await compute()
    except BaseException:
        await asyncio.shield(asyncio.to_thread(shared.release_idempotency, scope, key, print_))
        raise
    stored = IdempotentAnswer(response.status, response.body, response.headers)
    await asyncio.to_thread(shared.finish_idempotency, scope, key, stored)
    return response


async def answer_once(
    request: Request,
    scope: str,
    body: bytes,
    session_id: str | None,
    make: Callable[[], Awaitable[StoredResponse]],
) -> Response:
    """`make`'s JSON answer; with an Idempotency-Key, the answer stored for that key (a
    replay says so in a header) or `make`'s, stored for the next retry."""
    key = request.headers.get(HEADER)
    if key is None:
        stored, replayed = await make(), False
    else:
        cache: IdempotencyCache = request.app.state.idempotency
        stored, replayed = await cache.run(
            scope,
            validate_key(key),
            fingerprint(body, session_id),
            make,
            request.app.state.turns.spawn,
        )
    headers = dict(stored.headers)
    if replayed:
        headers["Idempotency-Replayed"] = "true"
    return Response(
        stored.body, status_code=stored.status, headers=headers, media_type="application/json"
    )
