"""The `cronjob` agent tool: one action-style tool to schedule and manage jobs in the caller's scope."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from hermes.cron.jobs import (
    JobExistsError,
    JobInputError,
    chat_of,
    ensure_job,
    origin_of,
    pause_job,
    remove_job,
    resume_job,
    update_job,
)
from hermes.cron.schedule import ScheduleError, resolve_timezone
from hermes.cron.store import Job, JobStore, JobStoreError
from hermes.store.base import Store
from hermes.tools.registry import ToolContext, ToolError, tool

_PROMPT_PREVIEW = 200


def summary(job: Job) -> dict[str, Any]:
    """The fields a model needs to talk about a job, without runtime bookkeeping."""
    prompt = job.get("prompt") or ""
    return {
        "id": job["id"],
        "name": job.get("name"),
        "schedule": job.get("schedule_display"),
        "prompt": prompt if len(prompt) <= _PROMPT_PREVIEW else prompt[:_PROMPT_PREVIEW] + "…",
        "skills": job.get("skills") or [],
        "deliver": job.get("deliver"),
        "model": job.get("model"),
        "state": job.get("state"),
        "enabled": job.get("enabled"),
        "repeat": job.get("repeat"),
        "next_run_at": job.get("next_run_at"),
        "last_run_at": job.get("last_run_at"),
        "last_status": job.get("last_status"),
        "last_error": job.get("last_error"),
    }


def _store(ctx: ToolContext) -> JobStore:
    settings = ctx.settings
    try:
        store = ctx.services.find(Store)  # type: ignore[type-abstract]
        documents = store.documents if store is not None else None
        tz = resolve_timezone(settings.timezone)
        return JobStore(settings.home, ctx.scope, tz, documents=documents)
    except ScheduleError as exc:
        raise ToolError(str(exc)) from None


def _need(value: str | None, what: str, action: str) -> str:
    if not value:
        raise ToolError(f"action {action!r} needs `{what}`")
    return value


async def _run(ctx: ToolContext, store: JobStore, ref: str) -> dict[str, Any]:
    from hermes.cron.ticker import Scheduler  # the ticker imports the agent loop

    scheduler = ctx.service(Scheduler)
    job, task = await scheduler.start_run(ctx.scope, ref)
    if scheduler.ticking:  # `hermes serve`: the run goes on after this turn
        return {
            "started": True,
            "job": summary(job),
            "note": "The run continues in the background; its output is delivered as usual.",
        }
    result = await task  # a one-off process (`hermes chat`) waits for the run to finish
    return {
        "job": summary(job),
        "status": result.status,
        "response": result.response,
        "error": result.error,
        "output_file": result.output_path.name if result.output_path else None,
    }


def _changes(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


@tool
async def cronjob(
    ctx: ToolContext,
    action: Literal["create", "list", "update", "pause", "resume", "run", "remove"],
    job_id: str | None = None,
    schedule: str | None = None,
    prompt: str | None = None,
    name: str | None = None,
    deliver: str | None = None,
    repeat: int | str | None = None,
    skills: list[str] | None = None,
    model: str | None = None,
    attach_session: bool = False,
) -> dict[str, Any]:
    """Schedule prompts that run later or repeatedly, and manage those jobs.
    Each run starts a fresh conversation, so the prompt must say everything needed.

    Args:
        action: run = run it now.
        job_id: The job's id or exact name.
        schedule: cron ('0 9 * * 1-5'), 'every 30m', 'in 2h', 'daily at 7am',
            'weekdays at 9am' or ISO time ('2030-06-01T09:00').
        prompt: The complete instruction each run carries out.
        name: A short label for the job.
        deliver: Where answers go: 'origin' (this chat; default in a chat), 'local' (saved
            files; default elsewhere), 'home' (owner's home chat), a webhook URL,
            'telegram[:<chat id>]' or 'email:<address>'.
        repeat: Number of runs, or 'forever' (default: 1 for one-shot schedules, else
            forever).
        skills: Names of installed skills to load into every run.
        model: Only if the user names one: the model its runs use.
        attach_session: On create: runs see this conversation's recent turns.
    """
    store = _store(ctx)
    try:
        if action == "run":
            return await _run(ctx, store, _need(job_id, "job_id", action))
        result = await asyncio.to_thread(
            _manage,
            ctx,
            store,
            action,
            job_id,
            _changes(
                schedule=schedule,
                prompt=prompt,
                name=name,
                deliver=deliver,
                repeat=repeat,
                skills=skills,
                model=model,
            ),
            attach_session,
        )
    except JobInputError as exc:
        raise ToolError(f"{exc.field}: {exc}") from None
    except JobExistsError as exc:
        raise ToolError(
            f"{exc}; update that job (action 'update', job_id {exc.job.get('id')!r}) "
            "or create this one under another name"
        ) from None
    except JobStoreError as exc:
        raise ToolError(str(exc)) from None
    if action not in ("list", "remove"):
        _wake(ctx)
    return result


def _manage(
    ctx: ToolContext,
    store: JobStore,
    action: str,
    job_id: str | None,
    fields: dict[str, Any],
    attach_session: bool,
) -> dict[str, Any]:
    """Every action but `run`: plain file work, done off the event loop."""
    if action == "list":
        jobs = store.load()
        return {"jobs": [summary(j) for j in jobs], "count": len(jobs)}
    if action == "create":
        if "deliver" not in fields and chat_of(ctx.platform, ctx.session_id):
            fields["deliver"] = "origin"  # made in a chat: its answers go back to that chat
        job, created = ensure_job(
            store,
            schedule=_need(fields.pop("schedule", None), "schedule", action),
            **fields,
            session_id=ctx.session_id if attach_session else None,
            origin=origin_of(ctx.platform, ctx.session_id),
            max_jobs=ctx.settings.cron.max_jobs,
        )
        if not created:
            return {"created": False, "already_existed": True, "job": summary(job)}
        return {"created": True, "job": summary(job)}
    ref = _need(job_id, "job_id", action)
    if action == "update":
        job = update_job(store, ref, fields)
    elif action == "pause":
        job = pause_job(store, ref)
    elif action == "resume":
        job = resume_job(store, ref)
    elif action == "remove":
        return {"removed": True, "job": summary(remove_job(store, ref))}
    else:
        raise ToolError(f"unknown action {action!r}")
    return {"job": summary(job)}


def _wake(ctx: ToolContext) -> None:
    from hermes.cron.ticker import Scheduler

    scheduler = ctx.services.find(Scheduler)
    if scheduler is not None:
        scheduler.wake()
