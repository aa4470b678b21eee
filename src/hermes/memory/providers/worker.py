"""One background thread per provider that runs its calls in order.

Why a thread and not an asyncio task: the SDKs are blocking clients, and a provider that hangs
must not hold a thread of the default executor the store's writes use, nor live on an event
loop a CLI command closes. The queue is bounded: when the provider cannot keep up, new work
is dropped, counted and logged instead of growing without limit. `close` drains what is queued
within a deadline (a clean stop) and counts the rest as dropped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from hermes.memory.providers.backend import CallDropped

log = logging.getLogger(__name__)


@dataclass
class _Job:
    label: str
    run: Callable[[], Any]
    future: Future[Any] | None = None


class Worker:
    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self._queue: queue.Queue[_Job | None] = queue.Queue(capacity)
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        self.done = 0
        self.failed = 0
        self.dropped = 0
        self.errors: dict[str, str] = {}
        """The last failure of each kind of call that has not succeeded since."""

    @property
    def last_error(self) -> str | None:
        return next(reversed(self.errors.values()), None)

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    def submit(self, label: str, run: Callable[[], Any]) -> bool:
        """Queue `run`; False (counted, logged) when the queue is full or the worker closed."""
        return self._put(_Job(label, run))

    def call(self, label: str, run: Callable[[], Any]) -> Future[Any]:
        """Queue `run` and return a future of its result (cancelled when it cannot be queued)."""
        future: Future[Any] = Future()
        if not self._put(_Job(label, run, future)):
            future.cancel()
        return future

    def wait_idle(self, timeout: float) -> bool:
        """True once everything queued so far has run (tests, `memory status`)."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._queue.all_tasks_done.wait(left)
        return True

    def close(self, timeout: float) -> int:
        """Stop taking work, run what is queued until `timeout`, drop the rest; the number
        dropped."""
        self._closed = True
        thread = self._thread
        if thread is None:
            return 0
        deadline = time.monotonic() + timeout
        try:
            self._queue.put(None, timeout=max(0.0, deadline - time.monotonic()))
        except queue.Full:
            pass
        thread.join(max(0.0, deadline - time.monotonic()))
        left = 0
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            self._queue.task_done()
            if job is not None:
                left += 1
                if job.future is not None:
                    job.future.cancel()
        if left:
            self.dropped += left
            log.warning(
                "memory provider %s: stopped with %d call(s) not run (the provider was too "
                "slow to drain them in %.0fs)",
                self.name,
                left,
                timeout,
            )
        return left

    def _put(self, job: _Job) -> bool:
        if self._closed:
            self._drop(job, "the worker is stopping")
            return False
        self._ensure_thread()
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self._drop(job, f"{self._queue.maxsize} calls are already waiting")
            return False
        return True

    def _drop(self, job: _Job, why: str) -> None:
        self.dropped += 1
        log.warning(
            "memory provider %s: dropped %s (%s; %d dropped so far)",
            self.name,
            job.label,
            why,
            self.dropped,
        )

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"memory-provider:{self.name}", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                self._one(job)
            finally:
                self._queue.task_done()

    def _one(self, job: _Job) -> None:
        if job.future is not None and not job.future.set_running_or_notify_cancel():
            return
        try:
            result = job.run()
        except CallDropped as exc:
            self._drop(job, str(exc))
            if job.future is not None:
                job.future.set_exception(exc)
            return
        except Exception as exc:
            self.failed += 1
            self.errors[job.label] = f"{job.label} failed: {type(exc).__name__}: {exc}"
            log.warning("memory provider %s: %s failed: %s", self.name, job.label, exc)
            if job.future is not None:
                job.future.set_exception(exc)
            return
        self.done += 1
        self.errors.pop(job.label, None)
        if job.future is not None:
            job.future.set_result(result)
