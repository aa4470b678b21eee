"""`hermes db`: apply migrations, show the schema's state, copy everything between databases."""

from __future__ import annotations

import json
from datetime import datetime

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from hermes.cli_common import fail, settings_or_exit
from hermes.config.settings import Settings
from hermes.db.copy import (
    CopyReport,
    copy_jobs,
    copy_keys,
    copy_notes,
    copy_records,
    copy_sessions,
    count,
    scopes_of,
)
from hermes.store.base import Store, StoreError
from hermes.store.opener import open_store
from hermes.store.urls import redact

app = typer.Typer(
    help="The database behind Hermes (store.url / HERMES_DATABASE_URL): migrate, status, copy.",
    no_args_is_help=True,
)


def _open(url: str | None, *, migrate: bool) -> Store:
    settings = settings_or_exit()
    try:
        return open_store(
            url or settings.database_url,
            home=settings.home,
            pool_size=settings.store.pool_size,
            migrate=migrate,
        )
    except StoreError as exc:
        fail(str(exc), 1)


@app.command("migrate")
def migrate_cmd(
    url: str | None = typer.Option(None, "--url", help="Another database than store.url."),
) -> None:
    """Apply pending schema migrations (safe while replicas run: they migrate once)."""
    store = _open(url, migrate=False)
    try:
        applied = store.migrate()
        status = store.schema_status()
    except StoreError as exc:
        fail(str(exc), 1)
    finally:
        store.close()
    if applied:
        typer.echo(f"{status.url}: applied migrations {', '.join(map(str, applied))}")
    typer.echo(f"{status.url}: schema version {status.version}, up to date")


@app.command("status")
def status_cmd(
    url: str | None = typer.Option(None, "--url", help="Another database than store.url."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show the database, its schema version and any migrations not applied yet."""
    store = _open(url, migrate=False)
    try:
        status = store.schema_status()
        health = store.health()
    except StoreError as exc:
        fail(str(exc), 1)
    finally:
        store.close()
    if as_json:
        body = {
            "backend": status.backend,
            "url": status.url,
            "version": status.version,
            "applied": [{"version": v, "name": n, "applied_at": t} for v, n, t in status.applied],
            "pending": [{"version": v, "name": n} for v, n in status.pending],
            "health": {k: v for k, v in health.items() if k != "path"},
        }
        typer.echo(json.dumps(body))
        return
    typer.echo(f"database: {status.url} ({status.backend})")
    typer.echo(f"schema version: {status.version}")
    for version, name, at in status.applied:
        when = datetime.fromtimestamp(at).astimezone().strftime("%Y-%m-%d %H:%M")
        typer.echo(f"  {version:>3} {name:<24} applied {when}")
    for version, name in status.pending:
        typer.echo(f"  {version:>3} {name:<24} PENDING (run `hermes db migrate`)")
    if "latency_ms" in health:
        typer.echo(f"latency: {health['latency_ms']} ms, pool: {health.get('pool')}")
    if status.pending:
        raise typer.Exit(3)


@app.command("copy")
def copy_cmd(
    source: str = typer.Option(
        ..., "--from", help="The database to read (sqlite:///… or postgresql://…)."
    ),
    target: str = typer.Option(..., "--to", help="The database to fill (made current first)."),
) -> None:
    """Copy sessions, notes, cron jobs and scoped API keys between databases; run again to
    finish or re-check."""
    if redact(source) == redact(target):
        fail("--from and --to name the same database; nothing to copy", 2)
    settings = settings_or_exit()
    src = _open(source, migrate=True)
    try:
        dst = _open(target, migrate=True)
    except BaseException:
        src.close()
        raise
    try:
        report = _copy(settings, src, dst)
    except StoreError as exc:
        fail(str(exc), 1)
    finally:
        src.close()
        dst.close()
    typer.echo(
        f"copied {report.copied_sessions} session(s) ({report.skipped_sessions} already there), "
        f"{report.notes_added} note entr(ies), {report.jobs_added} job(s), "
        f"{report.keys_added} scoped key(s), {report.records_added} stored response(s) and "
        f"approval(s) from {redact(source)} to {redact(target)}"
    )
    for scope, dst_count in sorted(report.target.items()):
        src_count = report.source[scope]
        typer.echo(
            f"  {scope}: {src_count.sessions} sessions / {src_count.messages} messages → "
            f"{dst_count.sessions} / {dst_count.messages}"
        )
    problems = report.mismatches()
    if problems:
        for problem in problems:
            typer.echo(f"hermes: count mismatch: {problem}", err=True)
        fail("the target holds less than the source; run the copy again", 1)


def _copy(settings: Settings, src: Store, dst: Store) -> CopyReport:
    report = CopyReport()
    scopes = scopes_of(settings, src)
    for scope in scopes:
        report.source[scope] = count(src, scope)
    total = sum(c.sessions for c in report.source.values())
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console, disable=not console.is_terminal) as progress:
        task = progress.add_task("sessions", total=total)
        for scope in scopes:
            copy_sessions(src, dst, scope, report, lambda n: progress.advance(task, n))
            report.notes_added += copy_notes(settings, src, dst, scope)
            report.jobs_added += copy_jobs(settings, src, dst, scope)
    report.keys_added = copy_keys(src, dst)
    report.records_added = copy_records(src, dst)
    for scope in scopes:
        report.target[scope] = count(dst, scope)
    return report
