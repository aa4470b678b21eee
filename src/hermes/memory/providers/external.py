"""An external memory service as a Hermes memory layer (SPEC §5.3, §15).

The turn never waits for the service:
- after each turn, the turn is sent (`sync_turn`) and the next turn's recall is fetched, both
  on the provider's worker thread;
- before a model call, `prefetch` hands over the recall fetched earlier, if there is one, and
  never starts a call the turn would wait on (a miss only queues a fetch for the next turn);
- a recall slower than `memory.provider_timeout` is discarded for its turn and reported.

Everything sent to the service is redacted first (`hermes.redact`), and every call is
made for the provider-side user of the turn's scope (`identity.provider_user`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes.agent.memory_providers import NOT_CONVERSATIONS, MemoryProvider
from hermes.config.settings import Settings
from hermes.memory.providers.backend import Backend, ProviderError, Said
from hermes.memory.providers.identity import provider_user
from hermes.memory.providers.worker import Worker
from hermes.redact import Redactor
from hermes.services import Services

if TYPE_CHECKING:
    from hermes.agent.turn import TurnResult

log = logging.getLogger(__name__)

BackendFactory = Callable[[Settings], Backend]
RECALL_CHARS = 4000
QUERY_CHARS = 2000
DRAIN_TIMEOUT_S = 5.0
RECONNECT_S = (5.0, 300.0)  # a provider that cannot be opened is retried after 5 s, then less often


@dataclass
class Stats:
    """What `/health/detailed` and `hermes memory status` report."""

    recalls_served: int = 0
    recalls_missing: int = 0
    slow_recalls: int = 0
    last_problem: str | None = None
    last_recall_s: float | None = None
    connected: bool | None = None
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Recall:
    text: str
    at: float


def provider_secrets(settings: Settings) -> list[str]:
    """Every secret value this install knows, the providers' keys included."""
    from hermes.redact import settings_secrets

    mem = settings.memory
    keys = [mem.honcho.api_key, mem.supermemory.api_key]
    extra = [k.get_secret_value() for k in keys if k is not None and k.get_secret_value()]
    return [*settings_secrets(settings), *extra]


class ExternalMemory(MemoryProvider):
    """A `Backend` behind the memory-provider contract, with its worker and recall cache."""

    builtin = False

    def __init__(self, name: str, settings: Settings, make_backend: BackendFactory) -> None:
        self.name = name
        self.settings = settings
        self.timeout = settings.memory.provider_timeout
        self.worker = Worker(name, settings.memory.provider_queue)
        self.stats = Stats()
        self.redact = Redactor(provider_secrets(settings))
        self._make_backend = make_backend
        self._backend: Backend | None = None
        self._open_failure: tuple[float, float, ProviderError] | None = None  # retry at, wait
        self._recall: dict[str, _Recall] = {}
        self._lock = threading.Lock()

    # -- the contract --------------------------------------------------------------------

    def initialize(self, services: Services) -> None:
        from hermes.memory.providers.forget import track

        services.provide(self, ExternalMemory)
        track(self)
        self.worker.submit("connect", self._get_backend)  # SDK import and setup, off the turn

    async def prefetch(self, scope: str, session_id: str, user_message: str) -> str | None:
        """The recall fetched after the previous turn of this scope; never waits for one."""
        with self._lock:
            ready = self._recall.get(scope)
        if ready is None:
            self.stats.recalls_missing += 1
            self._queue_recall(scope, user_message)  # warm it for the next turn
            return None
        self.stats.recalls_served += 1
        return ready.text or None

    async def sync_turn(self, result: TurnResult) -> None:
        if result.source in NOT_CONVERSATIONS or result.finish_reason == "tool_calls":
            return
        said = [
            Said(r.role, self.redact(r.content))
            for r in result.stored
            if r.role in ("user", "assistant") and r.content and not r.tool_calls
        ]
        if not said:
            return
        user = provider_user(result.scope)
        session = result.session_id
        self.worker.submit("sync_turn", lambda: self._backend_now().store(user, session, said))
        query = next((s.content for s in reversed(said) if s.role == "user"), said[-1].content)
        self._queue_recall(result.scope, query)

    async def on_pre_compress(
        self, scope: str, session_id: str, messages: list[dict[str, Any]]
    ) -> str | None:
        """The provider's view of this user, as last recalled (no call on the turn's path)."""
        with self._lock:
            ready = self._recall.get(scope)
        if ready is None or not ready.text:
            return None
        return f"What {self.name} remembers about this user:\n{ready.text}"

    async def on_memory_write(self, scope: str, target: str, action: str, content: str) -> None:
        """Mirror a change of the built-in notes, on the worker (in order with the turns)."""
        if action not in ("add", "remove"):
            return
        user = provider_user(scope)
        entry = self.redact(content)

        def mirror() -> None:
            note = getattr(self._backend_now(), "note", None)
            if note is not None:  # a backend without it keeps only the conversations
                note(user, target, action, entry)

        self.worker.submit(f"note_{action}", mirror)

    async def on_session_end(self, scope: str, session_id: str) -> None:
        """A session closed: refresh the scope's recall so its next session starts with it."""
        self._queue_recall(scope, "")

    # -- tools and maintenance -----------------------------------------------------------

    async def search(self, scope: str, query: str, limit: int) -> list[str]:
        """The provider's own search for its tool: bounded by the provider's timeout."""
        user = provider_user(scope)
        text = self.redact(query)[:QUERY_CHARS]
        future = self.worker.call("search", lambda: self._backend_now().search(user, text, limit))
        result: list[str] = await asyncio.wait_for(asyncio.wrap_future(future), self.timeout)
        return result

    def forget(self, scope: str, timeout: float) -> int:
        """Delete `scope`'s memory at the provider (after the syncs already queued for it)."""
        with self._lock:
            self._recall.pop(scope, None)
        user = provider_user(scope)
        future = self.worker.call("forget", lambda: self._backend_now().forget(user))
        count: int = future.result(timeout)
        with self._lock:
            self._recall.pop(scope, None)
        return count

    def close(self, timeout: float = DRAIN_TIMEOUT_S) -> int:
        """A clean stop: drain the queue within `timeout`, then close the SDK's client."""
        from hermes.memory.providers.forget import untrack

        untrack(self)
        dropped = self.worker.close(timeout)
        backend, self._backend = self._backend, None
        if backend is not None:
            try:
                backend.close()
            except Exception as exc:
                log.warning("memory provider %s: closing failed: %s", self.name, exc)
        return dropped

    def health(self) -> dict[str, Any]:
        stats, worker = self.stats, self.worker
        problem = stats.last_problem or worker.last_error
        status = "ok"
        if stats.connected is False:
            status = "error"
        elif problem or worker.dropped:
            status = "degraded"
        detail = {
            "status": status,
            "provider": self.name,
            "timeout_s": self.timeout,
            "queued": worker.queued,
            "synced": worker.done,
            "failed": worker.failed,
            "dropped": worker.dropped,
            "recalls_served": stats.recalls_served,
            "recalls_not_ready": stats.recalls_missing,
            "slow_recalls_skipped": stats.slow_recalls,
        }
        pid = getattr(self._backend, "pid", None)
        if pid is not None or hasattr(self._backend, "restarts"):
            detail["process"] = {
                "pid": pid,
                "restarts": getattr(self._backend, "restarts", 0),
                "crashes": getattr(self._backend, "crashes", 0),
            }
        if stats.last_recall_s is not None:
            detail["last_recall_s"] = round(stats.last_recall_s, 3)
        if problem:
            detail["detail"] = problem
        return detail

    # -- on the worker thread ------------------------------------------------------------

    def _get_backend(self) -> Backend:
        """The open backend; opening it again only after a back-off when it failed, so a
        provider that cannot start is not restarted for every turn."""
        if self._backend is not None:
            return self._backend
        failed = self._open_failure
        if failed is not None and time.monotonic() < failed[0]:
            raise failed[2]
        try:
            self._backend = self._make_backend(self.settings)
        except ProviderError as exc:
            wait = RECONNECT_S[0] if failed is None else min(RECONNECT_S[1], failed[1] * 2)
            self._open_failure = (time.monotonic() + wait, wait, exc)
            self.stats.connected = False
            self.stats.last_problem = str(exc)
            log.error("memory provider %s is off: %s (retried in %.0fs)", self.name, exc, wait)
            raise
        self._open_failure = None
        self.stats.connected = True
        self.stats.last_problem = None
        return self._backend

    def _backend_now(self) -> Backend:
        return self._get_backend()

    def _queue_recall(self, scope: str, query: str) -> None:
        user = provider_user(scope)
        text = self.redact(query)[:QUERY_CHARS]
        self.worker.submit("prefetch", lambda: self._fetch_recall(scope, user, text))

    def _fetch_recall(self, scope: str, user: str, query: str) -> None:
        started = time.monotonic()
        text = self._backend_now().recall(user, query)
        took = time.monotonic() - started
        self.stats.last_recall_s = took
        if took > self.timeout:
            self.stats.slow_recalls += 1
            self.stats.last_problem = (
                f"a prefetch took {took:.1f}s, over memory.provider_timeout "
                f"({self.timeout:g}s): skipped for its turn"
            )
            log.warning("memory provider %s: %s", self.name, self.stats.last_problem)
            return
        if not isinstance(text, str):
            raise ProviderError(f"recall returned {type(text).__name__}, not text")
        with self._lock:
            self._recall[scope] = _Recall(text.strip()[:RECALL_CHARS], time.time())
        self.stats.last_problem = None  # in budget again
