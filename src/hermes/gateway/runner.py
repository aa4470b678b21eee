"""The gateway runner: starts every configured adapter inside `hermes serve`, supervises each
(a failure is logged and retried with back-off; it never stops the API or other adapters),
checks who may talk, and hands each chat's messages to that chat's worker."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Coroutine
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError
from hermes.gateway.access import Access
from hermes.gateway.base import AdapterError, Inbound, PlatformAdapter
from hermes.gateway.chats import ChatWorker
from hermes.gateway.commands import parse_command
from hermes.gateway.leases import GATEWAY_LEASE_SECONDS, PollerLease, lease_name
from hermes.gateway.live import LiveTiming
from hermes.gateway.platforms import PlatformSpec, configured_specs
from hermes.gateway.state import STATUS_TTL, ChatSessions, StatusFile
from hermes.gateway.turns import TurnMaker
from hermes.gateway.webhooks import WebhookAdapter
from hermes.observability import tracing
from hermes.store.base import DEFAULT_SCOPE, StoreError

if TYPE_CHECKING:
    from hermes.runtime import Runtime

log = logging.getLogger(__name__)

INBOUND = "gateway_inbound"
INBOUND_TTL = 86400.0
BACKOFF = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
STOP_STEP_S = 10.0
PAIRING_TEXT = (
    "Hi! I don't know you yet. Ask my owner to run\n\n    hermes gateway pair {code}\n\n"
    "and then message me again (the code works once, for an hour)."
)


@dataclass
class AdapterStatus:
    connected: bool = False
    state: str = "starting"
    last_error: str | None = None
    last_error_at: float | None = None
    connected_at: float | None = None
    restarts: int = 0
    messages_in: int = 0
    messages_out: int = 0
    refused: int = 0


class Gateway:
    """The runtime's gateway: one per process, a component (`services.get(Gateway)`)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        backoff: tuple[float, ...] = BACKOFF,
        lease_seconds: float = GATEWAY_LEASE_SECONDS,
    ) -> None:
        self.runtime = runtime
        self.lease_seconds = lease_seconds
        self.settings = runtime.settings
        self.agent = runtime.agent
        self.backoff = backoff
        self.live_timing = LiveTiming()  # the platforms' own pace; tests run it scaled down
        self.specs: dict[str, PlatformSpec] = {
            s.name: s for s in configured_specs(self.settings, runtime.registry)
        }
        documents = runtime.store.documents
        self.access = Access(self.settings, self.specs, documents)
        self.sessions = ChatSessions(self.settings.home, documents)
        self.busy_mode = self.settings.gateway.busy_mode
        self.home = self.settings.gateway.home
        self.adapters: dict[str, PlatformAdapter] = {}
        self.status: dict[str, AdapterStatus] = {n: AdapterStatus() for n in self.specs}
        self.workers: dict[tuple[str, str], ChatWorker] = {}
        self.turns = TurnMaker(self)
        # a shared database (documents kept there) keeps each replica's status as a record
        shared = runtime.store.records if documents is not None else None
        self._status_file = StatusFile(self.settings.home, shared)
        self._tasks: list[asyncio.Task[None]] = []
        self._dirty = asyncio.Event()

    @property
    def enabled(self) -> bool:
        return bool(self.specs)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for name in self.specs:
            self._tasks.append(loop.create_task(self._supervise(name), name=f"gateway:{name}"))
        self._tasks.append(loop.create_task(self._flush_status(), name="gateway:status"))
        self._write_status(force=True)

    async def stop(self) -> None:
        """Each step has a deadline: a turn or a platform that never finishes (a tool that
        ignores cancellation, a websocket close nobody answers) must not hold the server's
        shutdown, nor the other chats' and platforms' stops."""
        for (_, chat), worker in list(self.workers.items()):
            await _within(STOP_STEP_S, worker.close(), f"the turn in {chat}")
        await _within(STOP_STEP_S, self.turns.close(), "the typing indicators")
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await _within(
                STOP_STEP_S, asyncio.gather(*self._tasks, return_exceptions=True), "the listeners"
            )
        self._tasks.clear()
        for name, adapter in self.adapters.items():
            with contextlib.suppress(Exception):
                await _within(STOP_STEP_S, adapter.disconnect(), f"{name}'s disconnect")
        with contextlib.suppress(OSError, StoreError):
            await asyncio.to_thread(self._status_file.clear)

    async def _supervise(self, name: str) -> None:
        """Connect and listen; on any failure record it, wait (back-off), and start over.
        A polled platform first waits for its account's lease (one poller per account
        across replicas, `hermes.gateway.leases`)."""
        status, failures = self.status[name], 0
        while True:
            adapter: PlatformAdapter | None = None
            lease: PollerLease | None = None
            attempt = time.time()
            try:
                adapter = self.specs[name].create(self.settings)
                share = getattr(adapter, "share_state", None)
                if callable(share):  # state a webhook platform keeps, shared by replicas
                    share(self.runtime.store.documents)
                if not isinstance(adapter, WebhookAdapter):
                    lease = PollerLease(
                        self.runtime.store, lease_name(self.settings, name), ttl=self.lease_seconds
                    )
                    status.state = "standby"
                    self._changed(force=True)
                    await lease.acquire()
                    await self._while_held(lease, self._connect_and_listen(name, adapter))
                else:
                    await self._connect_and_listen(name, adapter)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # a refused credential will not fix itself soon: wait the longest step (an error
                # that is not Hermes's own is a crash, restarted on the usual back-off)
                permanent = isinstance(exc, HermesError) and not exc.retryable
                if (status.connected_at or 0) >= attempt:  # it did connect: start over
                    failures = 0
                failures = len(self.backoff) if permanent else failures + 1
                self._record_failure(name, exc)
            finally:
                status.connected = False
                self.adapters.pop(name, None)
                if adapter is not None:
                    with contextlib.suppress(Exception):
                        await adapter.disconnect()
                if lease is not None:
                    await lease.release()
            status.restarts += 1
            await asyncio.sleep(self.backoff[min(failures, len(self.backoff)) - 1])

    async def _connect_and_listen(self, name: str, adapter: PlatformAdapter) -> None:
        """Connect, mark the adapter connected, listen; raises when the connection ends."""
        status = self.status[name]
        await adapter.connect()
        self.adapters[name] = adapter
        status.connected, status.state = True, "connected"
        status.connected_at = time.time()
        self._changed(force=True)
        await adapter.listen(self.handle)
        raise AdapterError("the connection ended", retryable=True)

    async def _while_held(self, lease: PollerLease, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` while renewing the lease (from the moment it was taken, connecting
        included); when the lease is lost, stop `work` at once, so two replicas never poll
        one account together."""
        loop = asyncio.get_running_loop()
        working = loop.create_task(work)
        holding = loop.create_task(lease.hold())
        try:
            done, _ = await asyncio.wait({working, holding}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (working, holding):
                task.cancel()
            await asyncio.gather(working, holding, return_exceptions=True)
        if working in done:
            working.result()
            return
        raise AdapterError("another replica took over this account (the lease was lost)")

    def _record_failure(self, name: str, exc: Exception) -> None:
        status = self.status[name]
        text = str(exc) or type(exc).__name__
        if not isinstance(exc, AdapterError):
            text = f"{type(exc).__name__}: {text}"
            log.error("gateway adapter %s crashed; restarting", name, exc_info=exc)
        else:
            log.warning("gateway adapter %s failed: %s; retrying", name, text)
        status.state, status.last_error, status.last_error_at = "retrying", text, time.time()
        self._changed(force=True)

    # -- status ----------------------------------------------------------------------------

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {name: asdict(s) for name, s in self.status.items()}

    def _changed(self, *, force: bool = False) -> None:
        if force:
            self._write_status(force=True)
        else:
            self._dirty.set()

    def _write_status(self, *, force: bool = False) -> None:
        try:
            self._status_file.write(self.snapshot(), force=force)
        except (OSError, StoreError) as exc:
            log.warning("could not write the gateway status: %s", exc)

    async def _flush_status(self) -> None:
        while True:
            # rewritten at least every STATUS_TTL / 3 (a status record expires without it)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dirty.wait(), STATUS_TTL / 3)
            await asyncio.sleep(1.0)  # coalesce a burst of counters into one write
            self._dirty.clear()
            await asyncio.to_thread(self._write_status, force=True)

    # -- inbound ---------------------------------------------------------------------------

    async def handle(self, msg: Inbound) -> None:
        """Every inbound message of every adapter comes here; never raises. Each message is
        the root of its own trace."""
        try:
            with tracing.root_span("hermes.gateway.message", **{"hermes.platform": msg.platform}):
                await self._handle(msg)
        except Exception:
            log.exception("gateway: a message from %s could not be handled", msg.platform)

    async def _first_time(self, msg: Inbound) -> bool:
        """False for a message already handled here or on another replica (a webhook that
        the platform retried, maybe to another replica): its answer goes out once."""
        records = self.runtime.store.records
        if msg.message_id is None or records is None:
            return True
        key = f"{msg.platform}:{msg.chat}:{msg.message_id}"
        return await asyncio.to_thread(
            functools.partial(records.add_record, INBOUND, DEFAULT_SCOPE, key, {}, ttl=INBOUND_TTL)
        )

    async def _handle(self, msg: Inbound) -> None:
        if not await self._first_time(msg):
            log.info("gateway: %s message %s was handled already", msg.platform, msg.message_id)
            return
        status = self.status.get(msg.platform)
        if status is not None:
            status.messages_in += 1
            self._changed()
        if not self.access.is_listed(msg) and not await asyncio.to_thread(
            self.access.is_paired, msg.identity
        ):
            await self._refuse(msg)
            return
        worker = self.worker(msg.session_key, self.access.scope_of(msg.identity))
        command = parse_command(msg.text)
        if command is not None:
            from hermes.gateway.commands import HANDLERS

            reply = await HANDLERS[command.name](self, worker, msg, command.args)
        else:
            reply = await worker.submit(msg, self.busy_mode)
        if reply:
            await self.say(msg, reply)

    async def _refuse(self, msg: Inbound) -> None:
        """A stranger: no model call, nothing stored; at most a pairing code."""
        if msg.platform in self.status:
            self.status[msg.platform].refused += 1
        log.info("gateway: refused a message from %s (not allowed)", msg.identity)
        if not self.access.pairing_enabled:
            return
        offer = await asyncio.to_thread(self.access.pairing.offer, msg.identity, msg.sender_name)
        if offer is not None:
            await self.say(msg, PAIRING_TEXT.format(code=offer.code))

    def worker(self, key: str, scope: str = DEFAULT_SCOPE) -> ChatWorker:
        """The worker of one chat session key in one scope: in a group, each person's turns
        are their own (different brains never interrupt or stop each other)."""
        worker = self.workers.get((scope, key))
        if worker is None:
            worker = self.workers[(scope, key)] = ChatWorker(key, self.turns.run, scope=scope)
        return worker

    # -- outbound --------------------------------------------------------------------------

    async def say(self, msg: Inbound, text: str, *, reply: bool = False) -> None:
        """Answer in the message's chat (and thread); failures are logged, not raised."""
        adapter = self.adapters.get(msg.platform)
        if adapter is None:
            log.warning("gateway: %s is not connected; a reply was dropped", msg.platform)
            return
        try:
            await adapter.send(
                msg.chat,
                text,
                thread=msg.thread,
                reply_to=msg.message_id if reply else None,
                meta=msg.meta,
            )
        except Exception as exc:
            log.warning("gateway: sending to %s failed: %s", msg.session_key, exc)
            return
        self.count_out(msg.platform)

    def count_out(self, platform: str) -> None:
        if platform in self.status:
            self.status[platform].messages_out += 1
            self._changed()


async def _within(seconds: float, step: Awaitable[Any], what: str) -> None:
    """Await `step` for at most `seconds`; past that it is given up on, and said so."""
    try:
        async with asyncio.timeout(seconds):
            await step
    except TimeoutError:
        log.warning("gateway stop: %s did not end within %g s; stopping without it", what, seconds)
