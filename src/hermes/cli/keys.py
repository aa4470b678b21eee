"""`hermes keys create|list|revoke`: scoped API keys, one per end user."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import typer

from hermes.auth.keys import KeyError_, create_key, list_keys, parse_expiry, revoke
from hermes.cli_common import fail, settings_or_exit
from hermes.scopes import InvalidIdError
from hermes.store.api_keys import ApiKeyRecord
from hermes.store.base import Store

app = typer.Typer(help="Scoped API keys: each acts as one end user.", no_args_is_help=True)


def _when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds") if stamp else "never"


def _store() -> Store:
    from hermes.runtime import open_store

    return open_store(settings_or_exit())


@app.command("create")
def create_cmd(
    user: str = typer.Option(..., "--user", help="The end user the key acts as."),
    expires: str | None = typer.Option(None, "--expires", help="Lifetime, e.g. 30d, 12h, 1y."),
    label: str | None = typer.Option(None, "--label", help="A note to recognise the key by."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Create a key bound to USER's scope; the key is printed once and never shown again."""
    store = _store()
    try:
        seconds = parse_expiry(expires) if expires else None
        token, record = create_key(store, user, expires_in=seconds, label=label)
    except (KeyError_, InvalidIdError) as exc:
        fail(str(exc), 2)
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps({**record.as_dict(), "key": token}))
        return
    typer.echo(token)
    typer.echo(
        f"key {record.id} acts as user {record.user!r}, expires {_when(record.expires_at)}; "
        "store it now: Hermes keeps only its hash",
        err=True,
    )


@app.command("list")
def list_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every scoped key (never the secrets)."""
    store = _store()
    try:
        records: list[ApiKeyRecord] = list_keys(store)
    except KeyError_ as exc:
        fail(str(exc), 2)
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in records]))
        return
    if not records:
        typer.echo("no scoped keys (create one with `hermes keys create --user NAME`)")
    for r in records:
        state = "revoked" if r.revoked_at else ("expired" if not r.usable() else "active")
        typer.echo(f"{r.id}  {r.user}  {state}  expires {_when(r.expires_at)}  {r.label or ''}")


@app.command("revoke")
def revoke_cmd(
    key_id: str = typer.Argument(..., help="The key's id (from `hermes keys list`)."),
) -> None:
    """Revoke a key at once; requests made with it get 401 from then on."""
    store = _store()
    try:
        done = revoke(store, key_id)
    except KeyError_ as exc:
        fail(str(exc), 2)
    finally:
        store.close()
    if not done:
        fail(f"no active key with id {key_id!r}; see `hermes keys list`", 1)
    typer.echo(f"revoked {key_id}")
