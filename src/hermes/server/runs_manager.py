"""The runs of one server process: start them as tasks the server owns (a client that goes
away does not stop its run), find them within a scope, follow their events, stop them at
shutdown.

A run started here is followed live from memory; a run started by another replica (or one
this process has already let go of) is read back from the store, its events by polling.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from hermes.agent.turn import TurnRequest, TurnResult
from hermes.observability import context as ids
from hermes.observability import timings
from hermes.redact import Redactor, redact
from hermes.runtime import Runtime
from hermes.server.errors import APIError
from hermes.server.runs_live import FINAL_EVENTS, LiveRun, RunApprover, RunObserver
from hermes.server.runs_remote import RunControl
from hermes.server.streaming import _as_api_error
from hermes.store.base import RUN_FINAL, RunRecord

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15.0
POLL_SECONDS = 0.25
"""How often a subscriber to another replica's run reads its new events from the store."""
ORPHAN_CHECK_SECONDS = 5.0
"""How often a subscriber to another replica's quiet run checks that replica is still there."""
KEEP_FINISHED = 256
"""Finished runs kept in memory for quick replays; older ones are read from the store."""
STOP_WAIT_SECONDS = 10.0


def new_run_id() -> str:
    return f"run_{uuid.uuid4().hex}"


def usage_body(result: TurnResult) -> dict[str, int]:
    u = result.usage
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total_tokens,
    }


class RunManager:
    """One per app (`app.state.runs`)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store.runs
        self._live: dict[str, LiveRun] = {}
        self._finished: OrderedDict[str, LiveRun] = OrderedDict()
        self._closing = False
        self._mask = runtime.services.find(Redactor) or redact
        self.control = RunControl(
            runtime.store, runtime.store.records, self.store, lambda: self._live, self.stop
        )

    # -- starting -------------------------------------------------------------------------

    def unfinished(self, scope: str) -> int:
        return sum(1 for r in self._live.values() if r.record.scope == scope and not r.finished)

    async def start(self, scope: str, req: TurnRequest, *, model: str) -> LiveRun:
        """Register the run (429 over the caller's limit), save it, then start its turn."""
        limit = self.runtime.settings.server.max_concurrent_runs
        if self.unfinished(scope) >= limit:
            raise APIError(
                429,
                f"Too many runs at once: {limit} of yours are unfinished "
                f"(server.max_concurrent_runs is {limit}). Wait for one to finish, or stop "
                "one with POST /v1/runs/{id}/stop.",
                "rate_limit_error",
                "too_many_concurrent_runs",
                headers={"Retry-After": "1"},
            )
        if self._closing:
            raise APIError(
                503,
                "The server is shutting down and starts no new runs; retry shortly.",
                "server_error",
                "shutting_down",
                headers={"Retry-After": "5"},
            )
        now = time.time()
        record = RunRecord(new_run_id(), scope, "queued", now, now, req.session_id, model)
        run = LiveRun(record, self.store)
        self._live[record.id] = run
        try:
            await self.control.claim(record.id)
            await run.saved()
        except BaseException:
            del self._live[record.id]
            await self.control.let_go(record.id)
            raise
        req.approver = RunApprover(
            run, self.runtime.settings.tools.approval_timeout, self.runtime.store.records
        )
        req.steering = run.steering
        run.task = asyncio.get_running_loop().create_task(self._drive(run, req))
        return run

    async def _drive(self, run: LiveRun, req: TurnRequest) -> None:
        """The run's task: the turn, then its outcome as the last event (and in the store)."""
        ids.bind(run_id=run.record.id)  # this task's log lines and its turn carry the run id
        run.set_status("running")
        run.emit("run.started")
        try:
            result = await self.runtime.agent.run_turn(req, RunObserver(run, self._mask))
        except asyncio.CancelledError:
            run.set_status("cancelled")
            run.emit("run.cancelled")
            await self._settle(run)
            raise
        except Exception as exc:
            err = _as_api_error(exc, self.runtime.settings.home)
            run.record.error = err.body()["error"]
            run.set_status("failed")
            run.emit("run.failed", error=run.record.error)
        else:
            usage = usage_body(result)
            run.record.output, run.record.usage = result.content, usage
            run.record.session_id = result.session_id
            run.set_status("completed")
            run.emit("run.completed", output=result.content, usage=usage)
        await self._settle(run)

    async def _stored(self, run: LiveRun) -> None:
        try:
            await asyncio.shield(run.saved())
        except Exception:
            log.exception("run %s finished but could not be saved", run.record.id)

    async def _settle(self, run: LiveRun) -> None:
        """Save the finished run, then move it to the short list of finished ones."""
        timings.count("runs", status=run.record.status)
        await self._stored(run)
        self._live.pop(run.record.id, None)
        await self.control.let_go(run.record.id)
        self._finished[run.record.id] = run
        while len(self._finished) > KEEP_FINISHED:
            self._finished.popitem(last=False)

    # -- finding --------------------------------------------------------------------------

    def live(self, scope: str, run_id: str) -> LiveRun | None:
        """The run if this process has it in memory and it belongs to `scope`."""
        run = self._live.get(run_id) or self._finished.get(run_id)
        return run if run is not None and run.record.scope == scope else None

    async def get(self, scope: str, run_id: str) -> RunRecord | None:
        """The run's record: live from memory, else from the store (marked failed first
        when it is unfinished and the replica that ran it is gone)."""
        run = self.live(scope, run_id)
        if run is not None:
            if run.record.status in RUN_FINAL:
                await self._stored(run)  # told final once stored: every replica then agrees
            return run.record
        if self.store is None:
            return None
        record = await asyncio.to_thread(self.store.get_run, scope, run_id)
        return None if record is None else await self.control.orphaned(record)

    async def wait_over(self, record: RunRecord, within: float) -> RunRecord:
        """Re-read another replica's run until it is over (or `within` seconds passed)."""
        deadline = time.monotonic() + within
        while record.status not in RUN_FINAL and time.monotonic() < deadline:
            await asyncio.sleep(POLL_SECONDS)
            record = await self.get(record.scope, record.id) or record
        return record

    # -- following ------------------------------------------------------------------------

    async def follow(self, scope: str, run_id: str) -> AsyncIterator[dict[str, Any] | None]:
        """Every event of the run from the first, then live ones, until its final event;
        None when nothing happened for `KEEPALIVE_SECONDS` (time for a keepalive)."""
        run = self.live(scope, run_id)
        if run is not None:
            async for item in _follow_live(run):
                yield item
            return
        async for item in self._follow_stored(scope, run_id):
            yield item

    async def _follow_stored(self, scope: str, run_id: str) -> AsyncIterator[dict[str, Any] | None]:
        if self.store is None:
            return
        seen, quiet = 0, 0.0
        checked = time.monotonic()
        while True:
            events = await asyncio.to_thread(self.store.run_events, scope, run_id, after=seen)
            for event in events:
                seen = event.seq
                yield event.data
                if event.data.get("event") in FINAL_EVENTS:
                    return
            if events:
                quiet = 0.0
                continue
            if self._closing:
                return
            record = await asyncio.to_thread(self.store.get_run, scope, run_id)
            if record is not None and time.monotonic() - checked >= ORPHAN_CHECK_SECONDS:
                checked = time.monotonic()
                record = await self.control.orphaned(record)
            if record is None:
                return  # deleted meanwhile
            if record.status in RUN_FINAL:  # over: its last events were saved with the status
                for event in await asyncio.to_thread(
                    self.store.run_events, scope, run_id, after=seen
                ):
                    yield event.data
                return
            await asyncio.sleep(POLL_SECONDS)
            quiet += POLL_SECONDS
            if quiet >= KEEPALIVE_SECONDS:
                quiet = 0.0
                yield None

    # -- stopping -------------------------------------------------------------------------

    async def stop(self, run: LiveRun) -> None:
        """Cancel the run's turn (it keeps what it said) and wait until it has stopped."""
        task = run.task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait([task], timeout=STOP_WAIT_SECONDS)

    async def close(self) -> None:
        """At shutdown: start no more runs, cancel the unfinished ones and wait for them."""
        self._closing = True
        tasks = [run.task for run in self._live.values() if run.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.control.close()


async def _follow_live(run: LiveRun) -> AsyncIterator[dict[str, Any] | None]:
    seen = 0
    while True:
        while seen < len(run.events):
            data = run.events[seen].data
            seen += 1
            yield data
            if data["event"] in FINAL_EVENTS:
                return
        if not await run.wait_beyond(seen, KEEPALIVE_SECONDS):
            yield None
