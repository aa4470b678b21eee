"""One run in the process that runs it: its record, its events, and the seams its turn
listens on (the steering queue, pending approvals).

Events are kept in memory for live subscribers and late ones (replay), and saved to the
store in batches by one background writer per run, so a `message.delta` costs no database
round trip on the turn's path while every replica can still read the run back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from hermes.agent.turn import TurnObserver
from hermes.observability import timings
from hermes.store.base import (
    RUN_FINAL,
    RecordStore,
    RunEvent,
    RunRecord,
    RunStatus,
    RunStore,
)
from hermes.tools.approval import ApprovalRequest, Decision

log = logging.getLogger(__name__)

FINAL_EVENTS = frozenset({"run.completed", "run.failed", "run.cancelled"})
CHOICES: tuple[Decision, ...] = ("once", "session", "always", "deny")
PREVIEW_CHARS = 200


class LiveRun:
    """A run owned by this process. Everything here runs on the event loop thread."""

    def __init__(self, record: RunRecord, store: RunStore | None) -> None:
        self.record = record
        self.store = store
        self.events: list[RunEvent] = []
        self.steering: asyncio.Queue[str] = asyncio.Queue()
        self.approvals: deque[asyncio.Future[Decision]] = deque()
        self.task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._unsaved: list[RunEvent] = []
        self._dirty = True  # the record itself has never been saved
        self._saver: asyncio.Task[None] | None = None

    @property
    def finished(self) -> bool:
        return self.record.status in RUN_FINAL

    # -- what the turn reports ------------------------------------------------------------

    def emit(self, event: str, **fields: Any) -> None:
        """Record an event, wake subscribers and have it saved."""
        now = time.time()
        data = {"event": event, "run_id": self.record.id, "timestamp": now, **fields}
        item = RunEvent(len(self.events) + 1, data)
        self.events.append(item)
        self._unsaved.append(item)
        self.record.updated_at = now
        self._changed()

    def set_status(self, status: RunStatus) -> None:
        if self.record.status != status:
            self.record.status = status
            self.record.updated_at = time.time()
            self._changed()

    def _changed(self) -> None:
        self._dirty = True
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()
        if self.store is not None and (self._saver is None or self._saver.done()):
            self._saver = asyncio.get_running_loop().create_task(self._save_loop())

    # -- what subscribers use -------------------------------------------------------------

    async def wait_beyond(self, seen: int, within: float) -> bool:
        """Wait until there are more than `seen` events; False when `within` seconds passed
        first."""
        if len(self.events) > seen:
            return True
        wake = self._wake
        try:
            async with asyncio.timeout(within):
                await wake.wait()
        except TimeoutError:
            return False
        return True

    # -- saving ---------------------------------------------------------------------------

    async def _save_loop(self) -> None:
        while self._dirty and self.store is not None:
            batch, self._unsaved, self._dirty = self._unsaved, [], False
            snapshot = dataclasses.replace(self.record)
            try:
                await asyncio.to_thread(self.store.save_run, snapshot, batch)
            except Exception:
                log.exception("could not save run %s (will retry)", self.record.id)
                self._unsaved = batch + self._unsaved
                self._dirty = True
                return

    async def saved(self) -> None:
        """Wait until everything so far is in the store (one more try after a failure);
        raises what the store raised when it still cannot be written. Callers waiting at
        once all return only after the write: the first starts it, the others await it."""
        if self.store is None:
            return
        if self._saver is not None and not self._saver.done():
            await asyncio.shield(self._saver)
        if self._dirty:
            self._saver = asyncio.get_running_loop().create_task(self._save_once())
            await asyncio.shield(self._saver)

    async def _save_once(self) -> None:
        assert self.store is not None
        batch, self._unsaved, self._dirty = self._unsaved, [], False
        try:
            await asyncio.to_thread(self.store.save_run, dataclasses.replace(self.record), batch)
        except BaseException:
            self._unsaved = batch + self._unsaved
            self._dirty = True
            raise

    # -- approvals ------------------------------------------------------------------------

    def resolve_approvals(self, choice: Decision, *, every: bool = False) -> int:
        """Answer the oldest pending approval (or all of them); how many were answered."""
        answered = 0
        while self.approvals and (every or not answered):
            future = self.approvals.popleft()
            if not future.done():
                future.set_result(choice)
                answered += 1
        return answered


ANSWER = "run_approval"
"""Record kind of an answer sent to another replica than the one running the run."""
ANSWER_POLL_SECONDS = 0.5


class RunApprover:
    """The run's `Approver` (hermes.tools.approval): announce the request as an event, wait
    for `POST /v1/runs/{id}/approval`, deny when nobody answers within `timeout` seconds.
    An answer sent to another replica arrives as a store record (`run_approval`), which the
    waiting approver takes every `ANSWER_POLL_SECONDS`."""

    def __init__(self, run: LiveRun, timeout: float, records: RecordStore | None = None) -> None:
        self.run = run
        self.timeout = timeout
        self.records = records

    async def _answers_from_elsewhere(self) -> None:
        """Resolve the run's approvals with answers other replicas stored (until cancelled)."""
        if self.records is None:
            return
        record = self.run.record
        while True:
            await asyncio.sleep(ANSWER_POLL_SECONDS)
            found = await asyncio.to_thread(
                self.records.take_record, ANSWER, record.scope, record.id
            )
            if found is not None:
                choice = found.body.get("choice")
                if choice in CHOICES:
                    self.run.resolve_approvals(choice, every=bool(found.body.get("every")))

    async def approve(self, request: ApprovalRequest) -> Decision:
        run = self.run
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        run.approvals.append(future)
        run.set_status("waiting_for_approval")
        run.emit(
            "approval.request",
            tool=request.tool,
            command=request.action,
            reason=request.reason,
            choices=list(CHOICES),
        )
        timed_out = False
        remote = asyncio.get_running_loop().create_task(self._answers_from_elsewhere())
        try:
            choice = await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            choice, timed_out = "deny", True
        finally:
            remote.cancel()
            if future in run.approvals:
                run.approvals.remove(future)
            if not run.approvals and run.record.status == "waiting_for_approval":
                run.set_status("running")
        run.emit("approval.responded", choice=choice, timed_out=timed_out)
        timings.count("approvals", answer="timeout" if timed_out else choice)
        return choice


Mask = Callable[[str], str]


def preview(name: str, arguments: str, mask: Mask) -> str:
    """What a `tool.started` event shows of a call: a terminal command as written, else the
    arguments' JSON, cut short and with key-shaped secrets masked."""
    text = arguments
    if name == "terminal":
        try:
            command = json.loads(arguments).get("command")
        except (ValueError, AttributeError):
            command = None
        if isinstance(command, str):
            text = command
    text = mask(text)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


class RunObserver(TurnObserver):
    """Turns the agent's progress callbacks into the run's events."""

    def __init__(self, run: LiveRun, mask: Mask) -> None:
        self.run = run
        self.mask = mask
        self._previews: dict[str, str] = {}
        self._started: dict[str, float] = {}

    def on_delta(self, text: str) -> None:
        if text:
            self.run.emit("message.delta", delta=text)

    def on_tool_arguments(self, call_id: str, name: str, arguments: str) -> None:
        self._previews[call_id] = preview(name, arguments, self.mask)

    def on_tool_start(self, call_id: str, name: str) -> None:
        shown = self._previews.pop(call_id, "")
        if name.startswith("_"):  # internal tools stay out of every stream
            return
        self._started[call_id] = time.monotonic()
        self.run.emit("tool.started", tool=name, preview=shown)

    def on_tool_end(self, call_id: str, name: str, ok: bool) -> None:
        started = self._started.pop(call_id, None)
        if started is None:
            return
        duration = round(time.monotonic() - started, 3)
        self.run.emit("tool.completed", tool=name, duration=duration, error=not ok)
