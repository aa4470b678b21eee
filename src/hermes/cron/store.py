"""jobs.json per scope: tolerant load, atomic save, cross-process lock, lookup by id or name.

The file format is the original product's (`{"jobs": [...], "updated_at": ...}`, one dict per
job), so a user's existing file loads. Job records stay plain dicts: keys this version does
not know (added by hand or by a newer release) are carried through every save untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from hermes import fileio
from hermes.cron.schedule import (
    ScheduleError,
    default_repeat,
    describe,
    first_run,
    parse_schedule,
    to_iso,
)
from hermes.errors import HermesError
from hermes.fileio import atomic_write
from hermes.scopes import scope_root
from hermes.store.base import DEFAULT_SCOPE, DocumentStore

log = logging.getLogger(__name__)

JOB_ID = re.compile(r"^[a-f0-9]{12}$")
LOCK_WAIT_SECONDS = 30.0
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

Job = dict[str, Any]
Clock = Callable[[], datetime]


class JobStoreError(HermesError):
    """The jobs file cannot be used right now; the message says why and what to do."""


class JobStoreCorruptError(JobStoreError):
    """jobs.json is unreadable; it was copied aside and will not be overwritten."""


class JobLimitError(JobStoreError):
    """The scope already has as many jobs as `cron.max_jobs` allows."""


class JobNotFoundError(JobStoreError, LookupError):
    """No job with that id or name in this scope."""


class AmbiguousJobError(JobStoreError):
    """A name matched several jobs; the caller must use an id."""


def new_job_id() -> str:
    return uuid.uuid4().hex[:12]


def cron_dir(home: Path, scope: str) -> Path:
    return scope_root(home, scope) / "cron"


def jobs_path(home: Path, scope: str) -> Path:
    return cron_dir(home, scope) / "jobs.json"


def output_dir(home: Path, scope: str, job_id: str) -> Path:
    return cron_dir(home, scope) / "output" / job_id


def utc_now() -> datetime:
    return datetime.now(UTC)


# -------------------------------------------------------------------------- parsing


def _corrupt(path: Path, raw: bytes, detail: str) -> JobStoreCorruptError:
    """Copy the unreadable file aside (once per distinct content) and describe what happened."""
    digest = hashlib.sha256(raw).hexdigest()[:10]
    backup = path.with_name(f"jobs.corrupt-{digest}.json")
    if not backup.exists():
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
        except OSError as exc:
            log.error("could not back up the corrupt jobs file %s: %s", path, exc)
    log.error("jobs file %s is corrupt (%s); copy kept at %s", path, detail, backup)
    return JobStoreCorruptError(
        f"{path} is not a valid jobs file ({detail}). A copy was saved as {backup.name}; "
        "Hermes will not overwrite the file: fix it by hand or move it away."
    )


def parse_jobs_file(path: Path, raw: bytes) -> tuple[list[Job], dict[str, Any]]:
    """Jobs and the other top-level keys; accepts a BOM, a bare list or an id-keyed map."""
    if not raw.strip():
        return [], {}
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _corrupt(path, raw, f"not UTF-8 text at byte {exc.start}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = json.loads(text, strict=False)  # raw control characters in strings
        except json.JSONDecodeError as exc:
            raise _corrupt(
                path, raw, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    extra: dict[str, Any] = {}
    if isinstance(data, list):
        jobs = data
    elif isinstance(data, dict) and isinstance(data.get("jobs"), list):
        jobs = data["jobs"]
        extra = {k: v for k, v in data.items() if k not in ("jobs", "updated_at")}
    elif isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        jobs = [{"id": key, **value} for key, value in data.items()]
    elif isinstance(data, dict) and not data:
        jobs = []
    else:
        raise _corrupt(path, raw, 'expected {"jobs": [...]}, a list of jobs or an id-keyed map')
    bad = [i for i, job in enumerate(jobs) if not isinstance(job, dict)]
    if bad:
        raise _corrupt(path, raw, f"entry {bad[0] + 1} of the job list is not an object")
    return jobs, extra


STATES = ("scheduled", "paused", "completed", "error")
_NULLABLE = (
    "origin",
    "session_id",
    "model",
    "provider",
    "base_url",
    "paused_at",
    "paused_reason",
    "last_run_at",
    "last_status",
    "last_error",
    "last_delivery_error",
    "next_run_at",
)


def _looks_normal(job: Job) -> bool:
    """True when a record already has every field in a usable shape (the common case)."""
    skills = job.get("skills")
    repeat = job.get("repeat")
    return (
        isinstance(job.get("id"), str)
        and bool(_SAFE_ID.match(job["id"]))
        and isinstance(job.get("prompt"), str)
        and isinstance(skills, list)
        and all(isinstance(x, str) and x for x in skills)
        and job.get("skill") == (skills[0] if skills else None)
        and isinstance(job.get("name"), str)
        and bool(job["name"].strip())
        and isinstance(job.get("enabled"), bool)
        and isinstance(job.get("schedule"), dict)
        and "schedule_display" in job
        and isinstance(repeat, dict)
        and "times" in repeat
        and "completed" in repeat
        and job.get("state") in STATES
        and isinstance(job.get("deliver"), str)
        and isinstance(job.get("created_at"), str)
        and all(key in job for key in _NULLABLE)
    )


def normalize_job(job: Job, *, now: datetime, tz: tzinfo) -> bool:
    """Fill what a hand-edited or older record lacks, in place (unknown keys are kept);
    True if anything had to change, so the caller knows the file needs saving."""
    if _looks_normal(job):
        return False
    if not isinstance(job.get("id"), str) or not _SAFE_ID.match(job["id"]):
        job["id"] = new_job_id()
    prompt = job.get("prompt")
    job["prompt"] = prompt if isinstance(prompt, str) else ""
    skills = job.get("skills")
    if not isinstance(skills, list):
        skills = [job["skill"]] if isinstance(job.get("skill"), str) else []
    job["skills"] = [s for s in skills if isinstance(s, str) and s]
    job["skill"] = job["skills"][0] if job["skills"] else None
    if not isinstance(job.get("name"), str) or not job["name"].strip():
        job["name"] = (job["prompt"][:50] or job["skill"] or job["id"]).strip()
    if not isinstance(job.get("deliver"), str):
        job["deliver"] = "local"
    for key in _NULLABLE:
        if key != "next_run_at":
            job.setdefault(key, None)
    if not isinstance(job.get("created_at"), str):
        job["created_at"] = to_iso(now, tz)
    enabled = job.get("enabled")
    job["enabled"] = enabled if isinstance(enabled, bool) else True
    _normalize_schedule(job, now=now, tz=tz)
    if job.get("state") not in STATES:
        # a newer release's transient state ("running", …) or none at all
        job["state"] = "scheduled" if job["enabled"] else "paused"
    return True


def _normalize_schedule(job: Job, *, now: datetime, tz: tzinfo) -> None:
    schedule = job.get("schedule")
    if isinstance(schedule, str):
        try:
            schedule = parse_schedule(schedule, now=now, tz=tz)
        except ScheduleError as exc:
            job["state"] = "error"
            job["last_error"] = f"cannot use the schedule: {exc}"
            schedule = {"kind": "invalid", "display": job["schedule"]}
        job["schedule"] = schedule
    if not isinstance(schedule, dict):
        job["schedule"] = schedule = {"kind": "invalid", "display": str(schedule)}
        job["state"] = "error"
        job["last_error"] = "the job has no usable schedule"
    job.setdefault("schedule_display", describe(schedule))
    repeat = job.get("repeat")
    if isinstance(repeat, int) and not isinstance(repeat, bool):
        repeat = {"times": repeat, "completed": 0}
    if not isinstance(repeat, dict):
        repeat = {"times": default_repeat(schedule), "completed": 0}
    repeat.setdefault("times", default_repeat(schedule))
    repeat.setdefault("completed", 0)
    job["repeat"] = repeat
    if "next_run_at" not in job:
        job["next_run_at"] = None
        if job.get("state") in (None, "scheduled") and job.get("enabled", True):
            try:
                upcoming = first_run(schedule, now=now, tz=tz)
            except (ScheduleError, ValueError, KeyError, TypeError):
                upcoming = None
            job["next_run_at"] = to_iso(upcoming, tz) if upcoming else None


def find_job(jobs: list[Job], ref: str) -> Job:
    """By exact id, else by unique case-insensitive name."""
    ref = ref.strip()
    for job in jobs:
        if job.get("id") == ref:
            return job
    wanted = ref.casefold()
    named = [j for j in jobs if str(j.get("name", "")).casefold() == wanted]
    if len(named) == 1:
        return named[0]
    if named:
        ids = ", ".join(str(j.get("id")) for j in named)
        raise AmbiguousJobError(f"{len(named)} jobs are named {ref!r} ({ids}); use the id")
    raise JobNotFoundError(f"no job {ref!r} in this scope")


# -------------------------------------------------------------------------- locking


@contextlib.contextmanager
def file_lock(lock_path: Path, *, wait: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
    """The shared cross-process lock, with a timeout reported as a job-store error."""
    try:
        with fileio.file_lock(lock_path, wait=wait):
            yield
    except fileio.LockTimeoutError as exc:
        raise JobStoreError(str(exc)) from None


# -------------------------------------------------------------------------- the store

PRETTY_MAX_JOBS = 500


def _render(payload: dict[str, Any]) -> str:
    """Indented for the usual few jobs (hand-editable); one compact job per line beyond that,
    because indented JSON takes the slow pure-Python encoder (~150 ms for 10,000 jobs)."""
    jobs = payload["jobs"]
    if len(jobs) <= PRETTY_MAX_JOBS:
        return json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n"
    head = {k: v for k, v in payload.items() if k != "jobs"}
    scope = head.pop("scope", None)
    text = "{\n" + (f'"scope": {json.dumps(scope)},\n' if scope is not None else "")
    text += '"jobs": [\n' + ",\n".join(json.dumps(j, ensure_ascii=False, default=str) for j in jobs)
    rest = json.dumps(head, ensure_ascii=False, default=str)[1:-1]
    return text + "\n]" + (",\n" + rest if rest else "") + "\n}\n"


JOBS_DOCUMENT = "cron/jobs.json"


class JobStore:
    """One scope's jobs.json. Reads need no lock (saves are atomic renames); edits take it.

    With `documents` (a shared PostgreSQL database) the same JSON is the scope's
    `cron/jobs.json` document instead of a file, edited under the document's lock, so every
    replica sees and claims the same jobs.
    """

    def __init__(
        self,
        home: Path,
        scope: str,
        tz: tzinfo,
        *,
        clock: Clock = utc_now,
        documents: DocumentStore | None = None,
    ) -> None:
        self.home = home
        self.scope = scope
        self.tz = tz
        self.clock = clock
        self.documents = documents
        self.path = jobs_path(home, scope)
        self.lock_path = self.path.with_name(".jobs.lock")

    def _read_raw(self) -> tuple[list[Job], dict[str, Any]]:
        if self.documents is not None:
            text = self.documents.read_document(self.scope, JOBS_DOCUMENT)
            return parse_jobs_file(self.path, (text or "").encode("utf-8"))
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return [], {}
        except OSError as exc:
            raise JobStoreError(f"{self.path} cannot be read: {exc.strerror}") from None
        return parse_jobs_file(self.path, raw)

    def load(self) -> list[Job]:
        """Every job, normalised; a record that needed fixing is saved back (under the lock)
        so that ids given to hand-written jobs stay the same from one read to the next."""
        jobs, _ = self._read_raw()
        now = self.clock()
        changed = [normalize_job(job, now=now, tz=self.tz) for job in jobs]
        if not any(changed):
            return jobs
        with self.edit() as fixed:
            return fixed

    def get(self, ref: str) -> Job:
        return find_job(self.load(), ref)

    @contextlib.contextmanager
    def edit(self, *, save_if: Callable[[], bool] | None = None) -> Iterator[list[Job]]:
        """Load under the cross-process lock, let the caller mutate the list, save atomically.

        The file is written unless `save_if` says nothing changed (and loading fixed nothing).
        """
        if self.documents is not None:
            with self._edit_document(save_if=save_if, skip_locked=False) as jobs:
                assert jobs is not None
                yield jobs
            return
        with file_lock(self.lock_path):
            jobs, extra = self._read_raw()
            now = self.clock()
            fixed = [normalize_job(job, now=now, tz=self.tz) for job in jobs]
            yield jobs
            if save_if is None or save_if() or any(fixed):
                self._save(jobs, extra)

    @contextlib.contextmanager
    def try_edit(self, *, save_if: Callable[[], bool] | None = None) -> Iterator[list[Job] | None]:
        """Like `edit`, but None at once while another process holds the jobs (a claiming
        tick on another replica: that one claims what is due)."""
        if self.documents is None:
            with self.edit(save_if=save_if) as jobs:
                yield jobs
            return
        with self._edit_document(save_if=save_if, skip_locked=True) as jobs:
            yield jobs

    @contextlib.contextmanager
    def _edit_document(
        self, *, save_if: Callable[[], bool] | None, skip_locked: bool
    ) -> Iterator[list[Job] | None]:
        assert self.documents is not None
        with self.documents.edit_document(
            self.scope, JOBS_DOCUMENT, skip_locked=skip_locked
        ) as doc:
            if doc is None:
                yield None
                return
            jobs, extra = parse_jobs_file(self.path, (doc.text or "").encode("utf-8"))
            now = self.clock()
            fixed = [normalize_job(job, now=now, tz=self.tz) for job in jobs]
            yield jobs
            if save_if is None or save_if() or any(fixed):
                doc.new_text = self._payload_text(jobs, extra)

    def _payload_text(self, jobs: list[Job], extra: dict[str, Any]) -> str:
        payload: dict[str, Any] = {}
        if self.scope != DEFAULT_SCOPE:
            # first, so the ticker can read it without parsing (users/<dir> names are hashes)
            payload["scope"] = self.scope
        payload.update((k, v) for k, v in extra.items() if k != "scope")
        payload.update(jobs=jobs, updated_at=to_iso(self.clock(), self.tz))
        return _render(payload)

    def _save(self, jobs: list[Job], extra: dict[str, Any]) -> None:
        atomic_write(self.path, self._payload_text(jobs, extra).encode("utf-8"))


def scope_of_file(home: Path, path: Path, extra: dict[str, Any]) -> str | None:
    """The scope a jobs.json belongs to: the default at HERMES_HOME, else its `scope` key."""
    if path == jobs_path(home, DEFAULT_SCOPE):
        return DEFAULT_SCOPE
    scope = extra.get("scope")
    if isinstance(scope, str) and jobs_path(home, scope) == path:
        return scope
    return None


def all_job_files(home: Path) -> list[Path]:
    """The default scope's jobs.json plus every user scope's, whether or not they exist yet."""
    files = [jobs_path(home, DEFAULT_SCOPE)]
    users = home / "users"
    with contextlib.suppress(OSError):
        files.extend(sorted(p / "cron" / "jobs.json" for p in users.iterdir() if p.is_dir()))
    return files
