"""`hermes gateway status|pair|unpair`: works without a running server (reads the status and
pairing files under `$HERMES_HOME/gateway/`)."""

from __future__ import annotations

import json
import time
from typing import Any

import typer

from hermes.cli_common import fail, settings_or_exit
from hermes.config.settings import Settings
from hermes.gateway.access import PairingError, PairingStore
from hermes.gateway.status import gateway_report
from hermes.store.base import Store, StoreError
from hermes.store.urls import backend_of

app = typer.Typer(
    help="Messaging gateway: adapter status and pairing approvals.", no_args_is_help=True
)


def _ago(ts: Any) -> str:
    if not isinstance(ts, int | float):
        return "-"
    seconds = max(0, int(time.time() - ts))
    return f"{seconds}s ago" if seconds < 120 else f"{seconds // 60}m ago"


def _report() -> dict[str, Any]:
    settings = settings_or_exit()
    if backend_of(settings.database_url) == "sqlite":
        return gateway_report(settings)
    return gateway_report(settings, _shared_store(settings).records)


@app.command("status")
def status_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Each platform: configured, connected, last error, messages in/out."""
    report = _report()
    if as_json:
        typer.echo(json.dumps(report))
        return
    if report["running"]:
        typer.echo(f"gateway: running in `hermes serve` (pid {report['pid']})")
    else:
        typer.echo("gateway: not running (start `hermes serve`)")
    typer.echo(f"home: {report['home'] or '-'}   busy mode: {report['busy_mode']}")
    for name, a in report["adapters"].items():
        if not a["configured"]:
            typer.echo(f"  {name:<10} not configured")
            continue
        state = "connected" if a.get("connected") else a.get("state") or "down"
        typer.echo(
            f"  {name:<10} {state:<10} in {a.get('messages_in', 0):<6} "
            f"out {a.get('messages_out', 0):<6} restarts {a.get('restarts', 0)}"
        )
        if a.get("last_error"):
            typer.echo(
                f"             last error ({_ago(a.get('last_error_at'))}): {a['last_error']}"
            )


_opened: list[Store] = []


@app.callback()
def _group(ctx: typer.Context) -> None:
    """Messaging gateway: adapter status and pairing approvals."""
    ctx.call_on_close(_close_opened)


def _close_opened() -> None:
    while _opened:
        _opened.pop().close()


def _pairing(settings: Settings) -> PairingStore:
    """Pairing as the server sees it: a file in the home, or (PostgreSQL) the shared
    database's document, opened for this command and closed when it ends."""
    if backend_of(settings.database_url) == "sqlite":
        return PairingStore(settings.home)
    return PairingStore(settings.home, documents=_shared_store(settings).documents)


def _shared_store(settings: Settings) -> Store:
    """The shared database, opened for this command and closed when it ends."""
    from hermes.runtime import open_store

    try:
        store = open_store(settings)
    except StoreError as exc:
        fail(str(exc), 1)
    _opened.append(store)
    return store


@app.command("pair")
def pair_cmd(code: str = typer.Argument(..., help="The code the bot sent to the person.")) -> None:
    """Approve a pairing code: that person may talk to Hermes (in their own scope)."""
    settings = settings_or_exit()
    try:
        identity = _pairing(settings).approve(code)
    except PairingError as exc:
        fail(str(exc), 1)
    typer.echo(f"paired {identity}: they can message Hermes now (their own memory and sessions)")


@app.command("unpair")
def unpair_cmd(identity: str = typer.Argument(..., help="e.g. telegram:12345")) -> None:
    """Withdraw a pairing approval."""
    settings = settings_or_exit()
    if not _pairing(settings).revoke(identity):
        fail(f"{identity!r} is not paired", 1)
    typer.echo(f"unpaired {identity}")


@app.command("pairing")
def pairing_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Who is waiting for approval (pending codes) and who is paired."""
    settings = settings_or_exit()
    store = _pairing(settings)
    pending, approved = store.pending(), store.approved()
    if as_json:
        typer.echo(json.dumps({"pending": pending, "approved": approved}))
        return
    typer.echo(
        "pending (approve with `hermes gateway pair CODE`):" if pending else "no pending codes"
    )
    for entry in pending:
        name = f" ({entry['name']})" if entry.get("name") else ""
        typer.echo(f"  {entry['code']}  {entry['identity']}{name}  {_ago(entry.get('created_at'))}")
    if approved:
        typer.echo("paired:")
        for identity in sorted(approved):
            typer.echo(f"  {identity}")
