"""`hermes db`: apply migrations, show the schema's state, copy everything between databases."""

from __future__ import annotations

import json
from datetime import datetime

import typer

from hermes.cli.common import fail, settings_or_exit
from hermes.store.base import Store, StoreError
from hermes.store.opener import open_store

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
