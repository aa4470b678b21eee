"""The scheduler: find due jobs, claim them, run them, record the outcome.

At most once per slot: a job is claimed under the cross-process jobs lock *before* it runs —
the claim advances `next_run_at` past now (missed slots collapse into one catch-up run) and
counts the run against `repeat` — so a second ticker, or this one after a crash, never sees
that slot as due again. A claim whose process died is closed as "interrupted", not re-run.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import logging
import os
import re
import shutil
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent.loop import Agent
from hermes.cron.delivery import RETRY_DELAYS, DeliveryReport, deliver
from hermes.cron.outputs import record_delivery
from hermes.cron.runner import RunResult, execute_job
from hermes.cron.schedule import (
    ScheduleError,
    from_iso,
    next_after_slot,
    resolve_timezone,
    to_iso,
)
from hermes.cron.store import (
    JOBS_DOCUMENT,
    Job,
    JobStore,
    JobStoreError,
    all_job_files,
    find_job,
    jobs_path,
    output_dir,
    parse_jobs_file,
    scope_of_file,
    utc_now,
)
from hermes.delivery import Deliverers
from hermes.store.base import DEFAULT_SCOPE, DocumentStore

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

STALE_CLAIM_AFTER = timedelta(hours=24)
RECHECK_SECONDS = 300.0
DELIVERY = "cron_delivery"
"""Record kind of a run's delivery key per target: a message goes out once, anywhere."""
DELIVERY_KEY_TTL = 7 * 86400.0
_live_holders: set[str] = set()  # schedulers alive in this process


class JobRunningError(JobStoreError):
    """The job is already running; a second concurrent run is refused."""


@dataclass
class _FileState:
    """What one jobs.json held at a given (mtime, size, inode): enough to skip it cheaply."""

    key: tuple[int, int, int]
    scope: str | None
    earliest: datetime | None
    claimed: bool
    # re-read now and then even if (mtime, size, inode) look unchanged: inodes get reused
    expires: float = field(default_factory=lambda: time.monotonic() + RECHECK_SECONDS)


def _runs_left(job: Job) -> bool:
    repeat = job.get("repeat") or {}
    times, done = repeat.get("times"), repeat.get("completed") or 0
    return not isinstance(times, int) or times <= 0 or done < times


def _is_due(job: Job, now: datetime) -> bool:
    if job.get("enabled") is False or job.get("state", "scheduled") != "scheduled":
        return False
    if isinstance(job.get("run_claim"), dict):
        return False
    when = from_iso(job.get("next_run_at"))
    return when is not None and when <= now


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _summarize(jobs: list[Job]) -> tuple[datetime | None, bool]:
    """Earliest pending run and whether any claim is open. Records that still need
    normalising (hand-edited) count as due now so the next pass fixes and saves them."""
    earliest: datetime | None = None
    claimed = False
    for job in jobs:
        if "run_claim" in job:
            claimed = True
        if "next_run_at" not in job or not isinstance(job.get("schedule"), dict):
            return datetime.min.replace(tzinfo=UTC), claimed
        if job.get("enabled") is False or job.get("state", "scheduled") != "scheduled":
            continue
        when = from_iso(job.get("next_run_at"))
        if when is not None and (earliest is None or when < earliest):
            earliest = when
    return earliest, claimed


# Keys as they appear in the file (a quote inside a JSON string is escaped, so a prompt that
# mentions these words cannot match). Values we write never contain quotes or backslashes.
_NEXT_RUN = re.compile(rb'"next_run_at"\s*:\s*(null|"[^"\\]*")')
_SCHEDULE_KEY = re.compile(rb'"schedule"\s*:')
_SCOPE_FIRST = re.compile(rb'^\s*\{\s*"scope"\s*:\s*"([^"\\]*)"')


def quick_summary(raw: bytes, *, default: bool) -> tuple[str | None, datetime | None, bool] | None:
    """(scope, a lower bound of the earliest run, any claim open) without parsing the JSON.

    Ticking 10,000 jobs must stay cheap when nothing is due. The bound includes paused jobs'
    times, so it can only make a tick look closer, never skip a due job. None means "cannot
    tell" (a hand-edited record without next_run_at, no leading scope key): parse properly.
    """
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    scope: str | None = DEFAULT_SCOPE
    if not default:
        match = _SCOPE_FIRST.match(raw)
        if match is None:
            return None
        scope = match.group(1).decode("utf-8", "replace")
    values = _NEXT_RUN.findall(raw)
    if not values or len(values) != len(_SCHEDULE_KEY.findall(raw)):
        return None  # no job found (a file without jobs is small: parse it, corrupt or not)
    earliest: datetime | None = None
    for value in values:
        if value == b"null":
            continue
        when = from_iso(value[1:-1].decode("ascii", "replace"))
        if when is None:
            return None
        if earliest is None or when < earliest:
            earliest = when
    return scope, earliest, b'"run_claim"' in raw


def target_kind(target: str) -> str:
    """A delivery target's kind, for counting: `webhook`, `telegram` (of `telegram:42`), …"""
    if target.startswith(("http://", "https://")):
        return "webhook"
    return target.partition(":")[0] or "unknown"


@dataclass
class CronStats:
    """What this process's scheduler did since it started (read by `/metrics`); counted
    from the event loop and from the worker threads that edit jobs files."""

    runs: Counter[str] = field(default_factory=Counter)  # by outcome, as `last_status`
    late: int = 0  # scheduled runs claimed over two ticks after their slot
    deliveries: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind, outcome)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def ran(self, outcome: str) -> None:
        with self._lock:
            self.runs[outcome] += 1

    def ran_late(self) -> None:
        with self._lock:
            self.late += 1

    def delivered(self, report: DeliveryReport | None) -> None:
        sent = [(target_kind(t), "delivered") for t in (report.delivered if report else ())]
        failed = [(target_kind(t), "failed") for t in (report.failed if report else ())]
        with self._lock:
            self.deliveries.update(sent + failed)


class Scheduler:
    """Ticks over every scope's jobs.json and runs what is due through `agent`."""

    def __init__(
        self,
        agent: Agent,
        *,
        clock: Callable[[], datetime] = utc_now,
        http_client: httpx.AsyncClient | None = None,
        retry_delays: Sequence[float] = RETRY_DELAYS,
    ) -> None:
        self.agent = agent
        self.settings = agent.settings
        self.home: Path = agent.settings.home
        self.tz = resolve_timezone(agent.settings.timezone)
        self.clock = clock
        self.http_client = http_client
        self.retry_delays = tuple(retry_delays)
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        _live_holders.add(self.holder)
        self._slots = asyncio.Semaphore(agent.settings.cron.max_parallel)
        self._active: dict[tuple[str, str], asyncio.Task[RunResult]] = {}
        # (scope, job id) of claims this scheduler holds; written from worker threads
        self._running: set[tuple[str, str]] = set()
        self._cache: dict[Path, _FileState] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self.skipped: list[str] = []
        """Jobs files the last tick could not read (corrupt, locked), with why."""
        self.ticked_at: float | None = None
        """`time.monotonic()` when the periodic loop last finished a tick (cron health)."""
        self.tick_error: str | None = None
        """Why the loop's last tick failed, or None when it went through."""
        self.loop_started_at: float | None = None
        self.stats = CronStats()

    def store(self, scope: str, now: datetime | None = None) -> JobStore:
        clock = (lambda: now) if now is not None else self.clock
        return JobStore(self.home, scope, self.tz, clock=clock, documents=self.documents)

    @property
    def documents(self) -> DocumentStore | None:
        """Where jobs live when the database is shared (PostgreSQL), else None: files."""
        return self.agent.store.documents

    # -- ticking --------------------------------------------------------------------------

    async def tick(self, now: datetime | None = None, *, wait: bool = True) -> list[RunResult]:
        """Claim every due job in every scope and start its run; with `wait`, await them all."""
        now = now or self.clock()
        claimed = await asyncio.to_thread(self._claim_all, now)
        tasks = [self._start(scope, job) for scope, job in claimed]
        if not wait or not tasks:
            return []
        return list(await asyncio.gather(*tasks))

    def _file_state(self, path: Path) -> _FileState | None:
        """What a jobs.json holds, re-read only when the file changed (or every few minutes)."""
        try:
            st = path.stat()
        except FileNotFoundError:
            self._cache.pop(path, None)
            return None
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        state = self._cache.get(path)
        if state is not None and state.key == key and time.monotonic() < state.expires:
            return state
        state = _FileState(key=key, scope=None, earliest=None, claimed=False)
        self._cache[path] = state  # a corrupt file is reported once per version, not per tick
        raw = path.read_bytes()
        default = path == jobs_path(self.home, DEFAULT_SCOPE)
        quick = quick_summary(raw, default=default)
        if quick is not None:
            state.scope, state.earliest, state.claimed = quick
        else:
            jobs, extra = parse_jobs_file(path, raw)
            state.scope = scope_of_file(self.home, path, extra)
            state.earliest, state.claimed = _summarize(jobs)
        if state.scope is not None and jobs_path(self.home, state.scope) != path:
            state.scope = None
        if state.scope is None:
            log.warning("cron: %s names no scope it belongs to; its jobs are not run", path)
        return state

    def _claim_all(self, now: datetime) -> list[tuple[str, Job]]:
        """One pass over every scope's file (one worker-thread hop for the whole tick)."""
        claimed: list[tuple[str, Job]] = []
        problems: list[str] = []
        documents = self.documents
        if documents is not None:
            for scope in documents.document_scopes(JOBS_DOCUMENT):
                try:
                    claimed.extend(self._claim_due_document(documents, scope, now))
                except JobStoreError as exc:
                    log.error("cron tick skipped the jobs of scope %s: %s", scope, exc)
                    problems.append(f"jobs of scope {scope}: {exc}")
            self.skipped = problems
            return claimed
        for path in all_job_files(self.home):
            try:
                claimed.extend(self._claim_due(path, now))
            except JobStoreError as exc:
                log.error("cron tick skipped %s: %s", path, exc)
                problems.append(f"{path}: {exc}")
        self.skipped = problems
        return claimed

    def _claim_due(self, path: Path, now: datetime) -> list[tuple[str, Job]]:
        state = self._file_state(path)
        if state is None or state.scope is None:
            return []
        if not state.claimed and (state.earliest is None or state.earliest > now):
            return []
        scope = state.scope
        claimed: list[tuple[str, Job]] = []
        dirty = False
        with self.store(scope, now).edit(save_if=lambda: dirty) as jobs:
            dirty = self._claim_in(scope, jobs, now, claimed)
            earliest, has_claims = _summarize(jobs)
        with contextlib.suppress(OSError):  # remember the exact state we just wrote
            st = path.stat()
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            self._cache[path] = _FileState(key, scope, earliest, has_claims)
        return claimed

    def _claim_in(
        self, scope: str, jobs: list[Job], now: datetime, claimed: list[tuple[str, Job]]
    ) -> bool:
        """Close stale claims and claim what is due (the jobs are locked); True if changed."""
        dirty = self._close_stale_claims(scope, jobs, now)
        for job in jobs:
            if _is_due(job, now):
                self._claim(job, now)
                self._running.add((scope, job["id"]))
                claimed.append((scope, copy.deepcopy(job)))
        return dirty or bool(claimed)

    def _claim_due_document(
        self, documents: DocumentStore, scope: str, now: datetime
    ) -> list[tuple[str, Job]]:
        """Claim a scope's due jobs in the shared database. The jobs are edited under their
        document's lock, skipped while another replica holds it (that one is claiming:
        SKIP LOCKED); the claim moves `next_run_at` on before the lock is let go, so each
        slot is claimed by exactly one replica."""
        raw = (documents.read_document(scope, JOBS_DOCUMENT) or "").encode("utf-8")
        quick = quick_summary(raw, default=scope == DEFAULT_SCOPE)
        if quick is not None:
            _, earliest, open_claims = quick
            if not open_claims and (earliest is None or earliest > now):
                return []
        claimed: list[tuple[str, Job]] = []
        dirty = False
        with self.store(scope, now).try_edit(save_if=lambda: dirty) as jobs:
            if jobs is not None:
                dirty = self._claim_in(scope, jobs, now, claimed)
        return claimed

    def _claim(self, job: Job, now: datetime) -> None:
        """Mark the job as running and move its schedule on, before anything runs."""
        slot = from_iso(job.get("next_run_at")) or now
        if now - slot > timedelta(seconds=2 * self.settings.cron.tick_seconds):
            self.stats.ran_late()  # Hermes was down or busy: missed slots became this one run
        job["run_claim"] = {
            "at": to_iso(now, self.tz),
            "by": self.holder,
            "slot": job.get("next_run_at"),
            "kind": "scheduled",
        }
        repeat = job["repeat"]
        repeat["completed"] = int(repeat.get("completed") or 0) + 1
        if not _runs_left(job):
            job["next_run_at"] = None
            return
        try:
            upcoming = next_after_slot(job["schedule"], slot=slot, now=now, tz=self.tz)
        except (ScheduleError, ValueError, KeyError, TypeError) as exc:
            job["state"], job["last_error"] = "error", f"cannot compute the next run: {exc}"
            upcoming = None
        job["next_run_at"] = to_iso(upcoming, self.tz) if upcoming else None

    def _claim_is_stale(self, scope: str, job: Job, claim: dict[str, Any], now: datetime) -> bool:
        holder = str(claim.get("by", ""))
        if holder == self.holder:
            return (scope, job["id"]) not in self._running
        started = from_iso(claim.get("at"))
        if started is None or now - started > STALE_CLAIM_AFTER:
            return True
        host, _, rest = holder.partition(":")
        pid_text = rest.partition(":")[0]
        if host != socket.gethostname() or not pid_text.isdigit():
            return False
        if int(pid_text) == os.getpid():
            return holder not in _live_holders
        return not _pid_alive(int(pid_text))

    def _close_stale_claims(self, scope: str, jobs: list[Job], now: datetime) -> bool:
        """A claim left by a process that died: record the interruption, never re-run it."""
        closed = False
        for job in jobs:
            claim = job.get("run_claim")
            if not isinstance(claim, dict) or not self._claim_is_stale(scope, job, claim, now):
                continue
            closed = True
            self.stats.ran("interrupted")
            job.pop("run_claim", None)
            job["last_run_at"] = claim.get("at")
            job["last_status"] = "error"
            job["last_error"] = (
                f"the run started at {claim.get('at')} was interrupted (the Hermes process "
                "stopped before it finished); that slot is not run again"
            )
            if claim.get("kind") == "scheduled" and not _runs_left(job):
                job["state"], job["enabled"] = "completed", False
        return closed

    # -- running --------------------------------------------------------------------------

    def _forget(self, key: tuple[str, str], _task: asyncio.Task[RunResult]) -> None:
        self._active.pop(key, None)

    def _start(self, scope: str, job: Job) -> asyncio.Task[RunResult]:
        key = (scope, job["id"])
        task = asyncio.get_running_loop().create_task(self._run(scope, job))
        self._active[key] = task
        task.add_done_callback(functools.partial(self._forget, key))
        return task

    async def _first_delivery(self, scope: str, result: RunResult, target: str) -> bool:
        """Claim the run's delivery key for `target` in the store (true once, anywhere)."""
        records = self.agent.store.records
        if records is None:
            return True
        key = f"{result.session_id}|{target}"
        return await asyncio.to_thread(
            functools.partial(records.add_record, DELIVERY, scope, key, {}, ttl=DELIVERY_KEY_TTL)
        )

    async def _run(self, scope: str, job: Job) -> RunResult:
        claim = dict(job["run_claim"])
        try:
            async with self._slots:
                result = await execute_job(self.agent, scope, job, started=self.clock(), tz=self.tz)
                report = await deliver(
                    job,
                    result,
                    http_client=self.http_client,
                    allow_private=self.settings.cron.webhook_allow_private,
                    retry_delays=self.retry_delays,
                    deliverers=self.agent.services.find(Deliverers),
                    first_time=functools.partial(self._first_delivery, scope, result),
                )
                await asyncio.to_thread(
                    functools.partial(
                        record_delivery,
                        result.output_path,
                        report,
                        documents=self.documents,
                        scope=scope,
                    )
                )
                self.stats.delivered(report)
        except asyncio.CancelledError:
            await asyncio.shield(self._finish_off(scope, job, claim, None, None))
            raise
        except Exception as exc:  # a bug in a run must still close the claim
            log.exception("cron job %s crashed", job["id"])
            result = RunResult(
                job_id=job["id"],
                scope=scope,
                session_id="",
                status="error",
                started_at=self.clock(),
                prompt=job.get("prompt") or "",
                error=f"{type(exc).__name__}: {exc}",
            )
            report = None
        await self._finish_off(scope, job, claim, result, report)
        return result

    async def _finish_off(
        self,
        scope: str,
        job: Job,
        claim: dict[str, Any],
        result: RunResult | None,
        report: DeliveryReport | None,
    ) -> None:
        try:
            await asyncio.to_thread(self._finish, scope, job, claim, result, report)
        except JobStoreError as exc:
            log.error("cron job %s ran but its outcome could not be recorded: %s", job["id"], exc)
        finally:
            self._running.discard((scope, job["id"]))

    def _finish(
        self,
        scope: str,
        snapshot: Job,
        claim: dict[str, Any],
        result: RunResult | None,
        report: DeliveryReport | None,
    ) -> None:
        """Record the outcome on the job (if it still exists) and close our claim."""
        with self.store(scope).edit() as jobs:
            job = next((j for j in jobs if j.get("id") == snapshot["id"]), None)
            if job is None:  # removed while it ran: drop the output it just wrote
                shutil.rmtree(output_dir(self.home, scope, snapshot["id"]), ignore_errors=True)
                return
            if job.get("run_claim") == claim:
                job.pop("run_claim")
            if result is None:
                job["last_status"], job["last_run_at"] = "error", claim.get("at")
                job["last_error"] = "the run was cancelled because Hermes is shutting down"
                self.stats.ran("cancelled")
            else:
                self._record(job, result, report)
                self.stats.ran(job["last_status"])
            if claim.get("kind") == "scheduled" and not _runs_left(job):
                job["state"], job["enabled"] = "completed", False

    def _record(self, job: Job, result: RunResult, report: DeliveryReport | None) -> None:
        delivery_error = report.error if report else None
        job["last_run_at"] = to_iso(result.started_at, self.tz)
        job["last_delivery_error"] = delivery_error
        if result.status != "ok":
            job["last_status"], job["last_error"] = "error", result.error
            job["failure_streak"] = int(job.get("failure_streak") or 0) + 1
        elif delivery_error:
            job["last_status"], job["last_error"] = "delivery_failed", delivery_error
            job["failure_streak"] = 0
        else:
            job["last_status"], job["last_error"] = "ok", None
            job["failure_streak"] = 0
        job["last_output"] = result.output_path.name if result.output_path else None

    # -- manual runs ----------------------------------------------------------------------

    def _claim_manual(self, scope: str, ref: str) -> Job:
        now = self.clock()
        with self.store(scope).edit() as jobs:
            self._close_stale_claims(scope, jobs, now)
            job = find_job(jobs, ref)
            if isinstance(job.get("run_claim"), dict):
                raise JobRunningError(
                    f"job {job['id']} is already running (since {job['run_claim'].get('at')})"
                )
            job["run_claim"] = {"at": to_iso(now, self.tz), "by": self.holder, "kind": "manual"}
            self._running.add((scope, job["id"]))
            return copy.deepcopy(job)

    async def start_run(self, scope: str, ref: str) -> tuple[Job, asyncio.Task[RunResult]]:
        """Start a run now, outside the schedule (does not move next_run_at or count a repeat)."""
        job = await asyncio.to_thread(self._claim_manual, scope, ref)
        return job, self._start(scope, job)

    # -- background loop ------------------------------------------------------------------

    def start(self) -> None:
        """Tick now (catch-up) and then every `cron.tick_seconds`, inside the running loop."""
        if self._loop_task is None:
            self._stopping = False
            self.loop_started_at = time.monotonic()
            self._loop_task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while not self._stopping:
            try:
                await self.tick(wait=False)
                self.ticked_at, self.tick_error = time.monotonic(), None
            except Exception as exc:
                log.exception("cron tick failed")
                self.tick_error = f"{type(exc).__name__}: {exc}"
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.cron.tick_seconds):
                    await self._wake.wait()

    def wake(self) -> None:
        """Tick again now (after a job was created or changed)."""
        self._wake.set()

    @property
    def ticking(self) -> bool:
        """True while the periodic loop runs (inside `hermes serve`)."""
        return self._loop_task is not None

    @property
    def loop_ended(self) -> bool:
        """The periodic loop was started and has ended without `stop()`: nothing ticks."""
        return self._loop_task is not None and self._loop_task.done()

    @property
    def runs_in_flight(self) -> int:
        return len(self._active)

    async def stop(self) -> None:
        """Stop ticking and cancel runs in flight (each is recorded as interrupted)."""
        self._stopping = True
        self._wake.set()
        tasks = [t for t in (self._loop_task, *self._active.values()) if t is not None]
        self._loop_task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        _live_holders.discard(self.holder)

    async def drain(self) -> list[RunResult]:
        """Wait for the runs in flight (CLI and tests)."""
        tasks = list(self._active.values())
        done = await asyncio.gather(*tasks, return_exceptions=True)
        return [r for r in done if isinstance(r, RunResult)]
