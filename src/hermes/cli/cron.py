"""`hermes cron`: manage scheduled prompts and run them by hand (`run`, `tick`)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from hermes.cli_common import fail, scope_or_exit, settings_or_exit
from hermes.config.settings import Settings
from hermes.cron.jobs import (
    JobExistsError,
    JobInputError,
    ensure_job,
    pause_job,
    remove_job,
    resume_job,
    update_job,
)
from hermes.cron.schedule import ScheduleError, resolve_timezone
from hermes.cron.store import JobNotFoundError, JobStore, JobStoreError
from hermes.runtime import open_store
from hermes.store.base import DocumentStore, Store, StoreError
from hermes.store.urls import backend_of

app = typer.Typer(
    help="Scheduled prompts: list, add, edit, pause, resume, run, remove, tick.",
    no_args_is_help=True,
)

UserOption = typer.Option(None, "--user", help="End-user scope (default: the owner's).")
RefArgument = typer.Argument(..., help="Job id, or its exact name.")


def _store(user: str | None) -> tuple[Settings, JobStore]:
    scope = scope_or_exit(user)
    settings = settings_or_exit()
    try:
        tz = resolve_timezone(settings.timezone)
    except ScheduleError as exc:
        fail(str(exc), 2)
    return settings, JobStore(settings.home, scope, tz, documents=_documents(settings))


def _documents(settings: Settings) -> DocumentStore | None:
    """The shared database's documents when store.url is PostgreSQL (closed with the
    command), else None: jobs.json is a file in the home."""
    if backend_of(settings.database_url) == "sqlite":
        return None
    try:
        store = open_store(settings)
    except StoreError as exc:
        fail(str(exc), 1)
    _opened.append(store)
    return store.documents


_opened: list[Store] = []


@app.callback()
def _group(ctx: typer.Context) -> None:
    """Scheduled prompts: list, add, edit, pause, resume, run, remove, tick."""
    ctx.call_on_close(_close_opened)


def _close_opened() -> None:
    while _opened:
        _opened.pop().close()


@contextmanager
def _reported() -> Iterator[None]:
    """Job errors become one line on stderr and a non-zero exit, never a traceback."""
    try:
        yield
    except JobInputError as exc:
        fail(f"{exc.field}: {exc}", 2)
    except JobNotFoundError as exc:
        fail(f"{exc}; `hermes cron list` shows the jobs", 1)
    except JobExistsError as exc:
        fail(
            f"{exc}; `hermes cron edit {exc.job.get('id')}` changes it, or give another --name",
            1,
        )
    except JobStoreError as exc:
        fail(str(exc), 1)


def _line(job: dict[str, Any]) -> str:
    last = job.get("last_status") or "-"
    state = job.get("state") or "-"
    if isinstance(job.get("run_claim"), dict):
        state = "running"
    return (
        f"{job['id']}  {str(job.get('name'))[:28]:<28}  {str(job.get('schedule_display'))[:20]:<20}"
        f"  next {job.get('next_run_at') or '-':<25}  last {last:<15}  {state}"
    )


@app.command("list")
def list_cmd(
    user: str | None = UserOption,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output (full records)."),
) -> None:
    """List the jobs of a scope."""
    _, store = _store(user)
    with _reported():
        jobs = store.load()
    if as_json:
        typer.echo(json.dumps(jobs, ensure_ascii=False))
        return
    if not jobs:
        typer.echo('No jobs yet. `hermes cron add "daily at 7am" "..."` creates one.')
        return
    for job in jobs:
        typer.echo(_line(job))
        if job.get("last_error"):
            typer.echo(f"    last error: {job['last_error']}")


@app.command("add")
def add_cmd(
    schedule: str = typer.Argument(
        ..., help="'0 9 * * 1-5', 'every 30m', 'in 2h', 'daily at 7am', an ISO time…"
    ),
    prompt: str = typer.Argument(..., help="What each run should do (the whole instruction)."),
    name: str | None = typer.Option(None, "--name", help="A label (default: the prompt's start)."),
    deliver: str = typer.Option(
        "local",
        "--deliver",
        help="'local', 'home', a webhook URL, 'telegram[:<chat>]' or 'email:<address>'.",
    ),
    repeat: str | None = typer.Option(
        None, "--repeat", help="Runs before the job retires, or 'forever'."
    ),
    skill: list[str] | None = typer.Option(
        None, "--skill", help="A skill to load into every run (repeatable)."
    ),
    session: str | None = typer.Option(
        None, "--session", help="Let runs see this session's recent turns."
    ),
    model: str | None = typer.Option(
        None, "--model", help="Run on this model instead of the configured one."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="The --model's endpoint (default: model.base_url)."
    ),
    fallback: list[str] | None = typer.Option(
        None,
        "--fallback",
        help="A model tried when --model fails, 'NAME' or 'NAME=BASE_URL' (repeatable); "
        "the configured chain comes after them.",
    ),
    paused: bool = typer.Option(False, "--paused", help="Create it paused."),
    user: str | None = UserOption,
    as_json: bool = typer.Option(
        False, "--json", help='Machine-readable output: {"job": {...}, "created": bool}.'
    ),
) -> None:
    """Create a job (the same job added again is reported as already there)."""
    settings, store = _store(user)
    with _reported():
        job, created = ensure_job(
            store,
            schedule=schedule,
            prompt=prompt,
            name=name,
            deliver=deliver,
            repeat=repeat,
            skills=skill or None,
            session_id=session,
            model=model,
            base_url=base_url,
            fallbacks=_fallbacks(fallback),
            paused=paused,
        )
    if as_json:
        typer.echo(json.dumps({"job": job, "created": created}, ensure_ascii=False))
    else:
        verb = "created" if created else "already there:"
        typer.echo(
            f"{verb} {job['id']} ({job['name']}): {job['schedule_display']}, "
            f"next run {job['next_run_at'] or '-'}"
        )
    if not serve_is_running(settings):
        typer.echo(
            "warning: no `hermes serve` is running here, so nothing will tick this job; start "
            "it (or run `hermes cron tick` from your own scheduler)",
            err=True,
        )


def _fallbacks(values: list[str] | None) -> list[dict[str, str]] | None:
    """`--fallback NAME` or `NAME=BASE_URL`, as the job layer's `{name, base_url?}` entries."""
    if not values:
        return None
    entries: list[dict[str, str]] = []
    for value in values:
        name, sep, url = value.partition("=")
        entries.append({"name": name, "base_url": url} if sep else {"name": name})
    return entries


def serve_is_running(settings: Settings) -> bool:
    """Whether something listens on the configured server address (a quick local connect)."""
    host = settings.server.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    try:
        with socket.create_connection((host, settings.server.port), timeout=0.3):
            return True
    except OSError:
        return False


@app.command("edit")
def edit_cmd(
    ref: str = RefArgument,
    schedule: str | None = typer.Option(None, "--schedule"),
    prompt: str | None = typer.Option(None, "--prompt"),
    name: str | None = typer.Option(None, "--name"),
    deliver: str | None = typer.Option(None, "--deliver"),
    repeat: str | None = typer.Option(None, "--repeat"),
    skill: list[str] | None = typer.Option(
        None, "--skill", help="Replace the skills (repeatable)."
    ),
    clear_skills: bool = typer.Option(False, "--clear-skills"),
    session: str | None = typer.Option(None, "--session", help="Linked session ('' to unlink)."),
    model: str | None = typer.Option(
        None, "--model", help="The job's own model ('' for the configured one)."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="The --model's endpoint."),
    fallback: list[str] | None = typer.Option(
        None, "--fallback", help="Replace the job's fallbacks: 'NAME' or 'NAME=BASE_URL'."
    ),
    clear_fallbacks: bool = typer.Option(False, "--clear-fallbacks"),
    user: str | None = UserOption,
) -> None:
    """Change a job's fields (only those given)."""
    _, store = _store(user)
    changes: dict[str, Any] = {
        k: v
        for k, v in {
            "schedule": schedule,
            "prompt": prompt,
            "name": name,
            "deliver": deliver,
            "repeat": repeat,
            "session_id": session,
            "model": model,
            "base_url": base_url,
        }.items()
        if v is not None
    }
    if model == "":  # back to the configured model: the pins go with it
        changes.update(base_url=None, fallbacks=[])
    if fallback or clear_fallbacks:
        changes["fallbacks"] = [] if clear_fallbacks else _fallbacks(fallback)
    if skill or clear_skills:
        changes["skills"] = [] if clear_skills else skill
    if not changes:
        fail(
            "nothing to change; give --schedule, --prompt, --name, --deliver, --repeat, "
            "--skill, --session, --model, --base-url or --fallback",
            2,
        )
    with _reported():
        job = update_job(store, ref, changes)
    typer.echo(f"updated {job['id']} ({job['name']}): next run {job['next_run_at'] or '-'}")


@app.command("pause")
def pause_cmd(
    ref: str = RefArgument,
    reason: str | None = typer.Option(None, "--reason"),
    user: str | None = UserOption,
) -> None:
    """Pause a job (it keeps its settings; `resume` schedules it again)."""
    _, store = _store(user)
    with _reported():
        job = pause_job(store, ref, reason)
    typer.echo(f"paused {job['id']} ({job['name']})")


@app.command("resume")
def resume_cmd(ref: str = RefArgument, user: str | None = UserOption) -> None:
    """Resume a paused job from the next slot after now."""
    _, store = _store(user)
    with _reported():
        job = resume_job(store, ref)
    typer.echo(f"resumed {job['id']} ({job['name']}): next run {job['next_run_at'] or '-'}")


@app.command("remove")
def remove_cmd(ref: str = RefArgument, user: str | None = UserOption) -> None:
    """Delete a job and its saved outputs."""
    _, store = _store(user)
    with _reported():
        job = remove_job(store, ref)
    typer.echo(f"removed {job['id']} ({job['name']})")


def _result_json(result: Any) -> dict[str, Any]:
    """One run as `--json` shows it (the fields of its saved output file)."""
    return {
        "job_id": result.job_id,
        "status": result.status,
        "session_id": result.session_id,
        "started_at": result.started_at.isoformat(),
        "output_path": str(result.output_path) if result.output_path else None,
        "response": result.response,
        "error": result.error,
    }


@app.command("run")
def run_cmd(
    ref: str = RefArgument,
    user: str | None = UserOption,
    as_json: bool = typer.Option(
        False, "--json", help="Machine-readable output: the run's status, output file, response."
    ),
) -> None:
    """Run a job now and wait for it (its schedule is not moved)."""
    settings, store = _store(user)
    with _reported():
        job = store.get(ref)
    result = asyncio.run(_run_now(settings, store.scope, job["id"]))
    if as_json:
        typer.echo(json.dumps(_result_json(result), ensure_ascii=False))
        raise typer.Exit(0 if result.status == "ok" else 1)
    typer.echo(f"output: {result.output_path}")
    if result.status != "ok":
        fail(f"job {job['id']} failed: {result.error}", 1)
    typer.echo(result.response or "(no response)")


async def _run_now(settings: Settings, scope: str, job_id: str) -> Any:
    from hermes.cron.ticker import Scheduler
    from hermes.runtime import build_runtime

    runtime = build_runtime(settings)
    scheduler = runtime.services.get(Scheduler)
    try:
        with _reported():
            _, task = await scheduler.start_run(scope, job_id)
        return await task
    finally:
        await scheduler.stop()
        await runtime.aclose()


@app.command("tick")
def tick_cmd(
    as_json: bool = typer.Option(
        False, "--json", help='Machine-readable output: {"runs": [...], "skipped": [...]}.'
    ),
) -> None:
    """Run one scheduler tick now: every due job in every scope, once."""
    settings = settings_or_exit()
    try:
        resolve_timezone(settings.timezone)
    except ScheduleError as exc:
        fail(str(exc), 2)
    results, skipped = asyncio.run(_tick(settings))
    if as_json:
        runs = [{**_result_json(r), "scope": r.scope} for r in results]
        typer.echo(json.dumps({"runs": runs, "skipped": skipped}, ensure_ascii=False))
        raise typer.Exit(1 if skipped else 0)
    if not results and not skipped:
        typer.echo("no jobs were due")
    for result in results:
        detail = result.error if result.status != "ok" else (result.output_path or "")
        typer.echo(f"{result.job_id} [{result.scope}] {result.status}: {detail}")
    for problem in skipped:
        typer.echo(f"error: cannot run the jobs in {problem}", err=True)
    if skipped:
        raise typer.Exit(1)


async def _tick(settings: Settings) -> tuple[list[Any], list[str]]:
    from hermes.cron.ticker import Scheduler
    from hermes.runtime import build_runtime

    runtime = build_runtime(settings)
    scheduler = runtime.services.get(Scheduler)
    try:
        return await scheduler.tick(), scheduler.skipped
    finally:
        await scheduler.stop()
        await runtime.aclose()
