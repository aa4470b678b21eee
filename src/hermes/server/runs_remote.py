"""Controlling a run from any replica. The replica that runs a run holds a lease on it
(`run:<id>`, renewed while the turn runs) and takes, every `POLL_SECONDS`, the commands other
replicas left for its runs in the store (`run_command` records: stop, steer). Another replica
that finds the lease free knows the run's replica is gone (killed, crashed) and marks the run
failed (`replica_lost`), so no run stays "running" forever and nobody waits on it.

Stop is idempotent (one record per run, replaced by a repeat); each steer is its own record,
applied in the order they were sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

from hermes.store.base import RUN_FINAL, RecordStore, RunRecord, RunStore
from hermes.store.leases import HEARTBEAT_SECONDS, LEASE_SECONDS, new_holder

log = logging.getLogger(__name__)

COMMAND = "run_command"
"""Record kind of a stop or steer sent to a replica that does not run the run."""
POLL_SECONDS = 0.5
COMMAND_TTL = 120.0
"""A command nobody took within this long (its run ended meanwhile) is dropped."""
REPLICA_LOST = "replica_lost"


class Leases(Protocol):
    """The part of `Store` this module uses (named leases)."""

    def acquire_lock(self, name: str, holder: str, ttl_seconds: float) -> bool: ...
    def release_lock(self, name: str, holder: str) -> None: ...
    def renew_lock(self, name: str, holder: str, ttl_seconds: float) -> bool: ...


class Controlled(Protocol):
    """What the poller needs of a live run (`runs_live.LiveRun`)."""

    record: RunRecord
    steering: asyncio.Queue[str]

    @property
    def finished(self) -> bool: ...


def lease_name(run_id: str) -> str:
    return f"run:{run_id}"


def run_of(key: str) -> str:
    """The run a command record is for (its key is `<run id>/stop` or `<run id>/steer/…`)."""
    return key.split("/", 1)[0]


def send_stop(records: RecordStore, scope: str, run_id: str) -> None:
    records.put_record(COMMAND, scope, f"{run_id}/stop", {"op": "stop"}, ttl=COMMAND_TTL)


def send_steer(records: RecordStore, scope: str, run_id: str, text: str) -> None:
    key = f"{run_id}/steer/{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    records.put_record(COMMAND, scope, key, {"op": "steer", "text": text}, ttl=COMMAND_TTL)


def lost_error() -> dict[str, Any]:
    return {
        "message": "The Hermes replica running this run stopped before the run finished "
        "(its process is gone); what the run said so far is kept in its session. Start the "
        "run again.",
        "type": "server_error",
        "param": None,
        "code": REPLICA_LOST,
    }


class RunControl:
    """One per `RunManager`: the leases of this replica's runs, the commands other replicas
    send them, and the check that another replica's run still has a replica."""

    def __init__(
        self,
        leases: Leases,
        records: RecordStore | None,
        runs: RunStore | None,
        live: Callable[[], Mapping[str, Controlled]],
        stop: Callable[[Any], Coroutine[Any, Any, None]],
    ) -> None:
        self.leases = leases
        self.records = records
        self.runs = runs
        self._live = live
        self._stop = stop
        self.holder = new_holder()
        self._held: set[str] = set()
        self._poller: asyncio.Task[None] | None = None
        self._stopping: set[asyncio.Task[None]] = set()

    @property
    def shared(self) -> bool:
        """Whether commands can travel between replicas at all."""
        return self.records is not None and self.runs is not None

    # -- this replica's runs --------------------------------------------------------------

    async def claim(self, run_id: str) -> None:
        """Hold the run's lease (before its record is saved, so no replica ever sees the run
        without one) and make sure the command poller runs."""
        if not self.shared:
            return
        taken = await asyncio.to_thread(
            self.leases.acquire_lock, lease_name(run_id), self.holder, LEASE_SECONDS
        )
        if taken:
            self._held.add(run_id)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def let_go(self, run_id: str) -> None:
        """The run is over and saved: free its lease."""
        if run_id in self._held:
            self._held.discard(run_id)
            try:
                await asyncio.to_thread(self.leases.release_lock, lease_name(run_id), self.holder)
            except Exception:
                log.warning("could not release the lease of run %s (it expires)", run_id)

    async def _poll(self) -> None:
        """Take commands for this replica's runs; renew their leases. Ends with the last run."""
        renewed = time.monotonic()
        while self._live():
            await asyncio.sleep(POLL_SECONDS)
            try:
                await self._take_commands()
                if time.monotonic() - renewed >= HEARTBEAT_SECONDS:
                    renewed = time.monotonic()
                    await self._renew()
            except Exception:
                log.exception("run commands: could not read the store (will retry)")

    async def _take_commands(self) -> None:
        assert self.records is not None
        found = await asyncio.to_thread(self.records.list_records, COMMAND)
        live = self._live()
        for item in sorted(found, key=lambda r: (r.created_at, r.key)):
            run = live.get(run_of(item.key))
            if run is None or run.record.scope != item.scope:
                continue  # another replica's run (or one over): its owner takes it, or it expires
            taken = await asyncio.to_thread(self.records.take_record, COMMAND, item.scope, item.key)
            if taken is not None and not run.finished:
                self._apply(run, taken.body)

    def _apply(self, run: Controlled, body: dict[str, Any]) -> None:
        if body.get("op") == "steer" and isinstance(body.get("text"), str):
            run.steering.put_nowait(body["text"])
        elif body.get("op") == "stop":
            task = asyncio.get_running_loop().create_task(self._stop(run))
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def _renew(self) -> None:
        for run_id in list(self._held):
            kept = await asyncio.to_thread(
                self.leases.renew_lock, lease_name(run_id), self.holder, LEASE_SECONDS
            )
            if not kept:
                log.warning(
                    "run %s: its lease was lost (another replica may mark it failed)", run_id
                )

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)

    # -- other replicas' runs -------------------------------------------------------------

    async def orphaned(self, record: RunRecord) -> RunRecord:
        """The unfinished `record` of a run this replica does not run, as it really is: failed
        (`replica_lost`) when its replica is gone (its lease could be taken), else unchanged."""
        if not self.shared or record.status in RUN_FINAL:
            return record
        holder, name = new_holder(), lease_name(record.id)
        free = await asyncio.to_thread(self.leases.acquire_lock, name, holder, LEASE_SECONDS)
        if not free:
            return record
        try:
            assert self.runs is not None
            failed = await asyncio.to_thread(
                self.runs.fail_run, record.scope, record.id, lost_error()
            )
        finally:
            await asyncio.to_thread(self.leases.release_lock, name, holder)
        if failed is not None:
            log.warning("run %s: its replica is gone; marked failed", record.id)
            return failed
        latest = await asyncio.to_thread(self.runs.get_run, record.scope, record.id)
        return latest or record
