"""`/api/jobs`: scheduled prompts over HTTP (SPEC §6), always within the caller's scope.

The ticker itself is a service of the cron part (`hermes.cron.part`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Body, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse

from hermes.cron.jobs import (
    JobExistsError,
    JobInputError,
    ensure_job,
    pause_job,
    remove_job,
    resume_job,
    update_job,
)
from hermes.cron.outputs import list_outputs
from hermes.cron.schedule import ScheduleError, resolve_timezone
from hermes.cron.store import (
    Job,
    JobLimitError,
    JobNotFoundError,
    JobStore,
    JobStoreCorruptError,
    JobStoreError,
)
from hermes.cron.ticker import JobRunningError, Scheduler
from hermes.runtime import Runtime
from hermes.server.deps import (
    get_runtime,
    get_scope,
    require_auth,
    scope_with_session,
    session_from_headers,
)
from hermes.server.errors import SERVER_ERROR, APIError
from hermes.text import find_lone_surrogate, sentence

router = APIRouter(prefix="/api/jobs", dependencies=[Depends(require_auth)])

_JOB_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
T = TypeVar("T")


class JobCreate(BaseModel):
    """POST /api/jobs body; unknown fields are refused so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")

    name: str
    schedule: str
    prompt: str | None = None
    deliver: str | None = None
    repeat: Any = None  # int, "forever" or "once": checked by the job layer, which names it
    skills: list[str] | None = None
    session_id: str | None = None
    model: Any = None  # the job's own model, its endpoint and fallbacks: checked by the job layer
    base_url: Any = None
    fallbacks: Any = None
    paused: bool = False
    paused_reason: str | None = Field(default=None, max_length=500)


# -------------------------------------------------------------------------- plumbing


def scheduler_for(runtime: Runtime) -> Scheduler:
    """The runtime's one Scheduler (made by the cron part), shared with the ticker and the tool."""
    return runtime.services.get(Scheduler)


def _store(runtime: Runtime, scope: str) -> JobStore:
    try:
        tz = resolve_timezone(runtime.settings.timezone)
    except ScheduleError as exc:
        raise APIError(
            500,
            sentence(f"Hermes' configuration is invalid: {exc}"),
            SERVER_ERROR,
            "invalid_timezone",
        ) from None
    scheduler = scheduler_for(runtime)
    return JobStore(
        runtime.settings.home, scope, tz, clock=scheduler.clock, documents=scheduler.documents
    )


def _job_id(job_id: str) -> str:
    if not _JOB_ID.match(job_id):
        raise APIError(
            400,
            f"{job_id!r} is not a job id (12 hex characters, e.g. '3f2a9c0b1d4e').",
            code="invalid_job_id",
            param="id",
        )
    return job_id


def _refuse_surrogates(value: Any) -> None:
    where = find_lone_surrogate(value)
    if where is not None:
        raise APIError(
            400,
            f"`{where}` holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape), "
            "which is not valid Unicode text.",
            code="invalid_unicode",
            param=where,
        )


def _api_error(exc: Exception) -> APIError:
    if isinstance(exc, JobExistsError):
        job_id = exc.job.get("id")
        return APIError(
            409,
            f"{sentence(str(exc))} Change that job with PATCH /api/jobs/{job_id}, remove it, "
            "or pick another name.",
            code="job_exists",
            param="name",
        )
    if isinstance(exc, JobLimitError):
        return APIError(429, sentence(str(exc)), code="job_limit_reached")
    if isinstance(exc, JobInputError):
        return APIError(
            400, sentence(f"`{exc.field}`: {exc}"), code="invalid_value", param=exc.field
        )
    if isinstance(exc, JobNotFoundError):
        return APIError(404, "Job not found in your scope.", code="job_not_found", param="id")
    if isinstance(exc, JobRunningError):
        return APIError(409, f"{exc}; wait for it to finish.", code="job_running")
    if isinstance(exc, JobStoreCorruptError):
        return APIError(500, str(exc), SERVER_ERROR, "jobs_file_corrupt")
    return APIError(503, sentence(str(exc)), SERVER_ERROR, "jobs_unavailable")


async def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run blocking job-file work off the event loop, with job errors as API errors."""
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except JobStoreError as exc:
        raise _api_error(exc) from None
    except JobInputError as exc:
        raise _api_error(exc) from None


def _find(store: JobStore, job_id: str) -> Job:
    jobs = store.load()
    for job in jobs:
        if job.get("id") == job_id:
            return job
    raise JobNotFoundError(job_id)


# -------------------------------------------------------------------------- routes


@router.get("")
async def list_jobs(
    runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)
) -> dict[str, Any]:
    jobs = await _call(_store(runtime, scope).load)
    return {"jobs": jobs}


@router.post("", status_code=201)
async def create(
    request: Request,
    body: JobCreate,
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> JSONResponse:
    """201 with a new job; 200 with the one already there when the same job (name and
    definition) is posted again; 409 `job_exists` when the name holds another definition."""
    _refuse_surrogates(body.model_dump())
    session_id = body.session_id if body.session_id is not None else session_from_headers(request)
    if body.session_id is not None:  # a job in a per-session brain lives in that brain
        scope = scope_with_session(request, scope, body.session_id)
    store = _store(runtime, scope)
    job, created = await _call(
        ensure_job,
        store,
        schedule=body.schedule,
        prompt=body.prompt,
        name=body.name,
        deliver=body.deliver,
        repeat=body.repeat,
        skills=body.skills,
        session_id=session_id,
        model=body.model,
        base_url=body.base_url,
        fallbacks=body.fallbacks,
        paused=body.paused,
        origin={"platform": "api"},
        max_jobs=runtime.settings.cron.max_jobs,
    )
    if not created:  # the same job posted again (a setup script run twice): 200, no copy
        return JSONResponse({"job": job}, status_code=200)
    if body.paused and body.paused_reason:
        job = await _call(pause_job, store, job["id"], body.paused_reason)
    scheduler_for(runtime).wake()
    return JSONResponse({"job": job}, status_code=201)


@router.get("/{job_id}")
async def get_job(
    job_id: str, runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)
) -> dict[str, Any]:
    return {"job": await _call(_find, _store(runtime, scope), _job_id(job_id))}


@router.patch("/{job_id}")
async def patch_job(
    job_id: str,
    payload: dict[str, Any] = Body(...),
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> dict[str, Any]:
    _refuse_surrogates(payload)
    store = _store(runtime, scope)
    await _call(_find, store, _job_id(job_id))  # a name in the URL must not match
    job = await _call(update_job, store, job_id, payload)
    scheduler_for(runtime).wake()
    return {"job": job}


@router.delete("/{job_id}")
async def delete_job(
    job_id: str, runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)
) -> dict[str, Any]:
    store = _store(runtime, scope)
    await _call(_find, store, _job_id(job_id))
    job = await _call(remove_job, store, job_id)
    return {"ok": True, "id": job["id"]}


@router.post("/{job_id}/pause")
async def pause(
    job_id: str, runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)
) -> dict[str, Any]:
    store = _store(runtime, scope)
    await _call(_find, store, _job_id(job_id))
    return {"job": await _call(pause_job, store, job_id)}


@router.post("/{job_id}/resume")
async def resume(
    job_id: str, runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)
) -> dict[str, Any]:
    store = _store(runtime, scope)
    await _call(_find, store, _job_id(job_id))
    job = await _call(resume_job, store, job_id)
    scheduler_for(runtime).wake()
    return {"job": job}


@router.post("/{job_id}/run")
async def run(
    job_id: str, runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)
) -> dict[str, Any]:
    """Start a run now in the background; its output appears under /runs when done."""
    store = _store(runtime, scope)
    await _call(_find, store, _job_id(job_id))
    try:
        job, _task = await scheduler_for(runtime).start_run(scope, job_id)
    except (JobStoreError, JobInputError) as exc:
        raise _api_error(exc) from None
    return {"job": job}


@router.get("/{job_id}/runs")
async def runs(
    job_id: str, runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)
) -> dict[str, Any]:
    """Saved outputs of the job, newest first."""
    store = _store(runtime, scope)
    job = await _call(_find, store, _job_id(job_id))
    outputs = await asyncio.to_thread(
        list_outputs, runtime.settings, scope, job["id"], runtime.store.documents
    )
    for item in outputs:
        item.pop("path", None)  # server paths are not the client's business
    return {"runs": outputs}
