"""`hermes users list|export|forget`: the end users Hermes holds something of (the same
functions as `/api/users`)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import typer

from hermes.cli_common import fail, settings_or_exit
from hermes.scopes import InvalidIdError, validate_id
from hermes.store.base import Store, StoreError

app = typer.Typer(help="End users: list, export or forget one.", no_args_is_help=True)


def _store() -> Store:
    from hermes.runtime import open_store

    return open_store(settings_or_exit())


def _user_or_exit(user: str) -> str:
    try:
        return validate_id(user, what="user id")
    except InvalidIdError as exc:
        fail(str(exc), 2)


def _when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds") if stamp else "-"


@app.command("list")
def list_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every end user with sessions, scoped keys, jobs or stored notes."""
    from hermes.users import list_users

    settings = settings_or_exit()
    store = _store()
    try:
        users = list_users(settings, store)
    except StoreError as exc:
        fail(str(exc), 1)
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps([u.as_dict() for u in users]))
        return
    if not users:
        typer.echo("No end users yet.")
    for u in users:
        typer.echo(
            f"{u.id:<40} {u.sessions:>5} sessions {u.messages:>7} msgs  "
            f"last active {_when(u.last_active)}"
        )


@app.command("export")
def export_cmd(
    user: str = typer.Argument(..., help="The end user's id."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Zip file to write (default: hermes-user-<id>.zip)."
    ),
) -> None:
    """Write a zip of everything of USER: sessions (JSONL), notes, jobs and outputs, keys."""
    from hermes.user_archive import write_archive

    user = _user_or_exit(user)
    settings = settings_or_exit()
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in user)[:80]
    target = output or Path(f"hermes-user-{safe}.zip")
    store = _store()
    try:
        with target.open("wb") as fh:
            about = write_archive(settings, store, user, fh)
    except OSError as exc:
        fail(f"{target}: {exc.strerror or exc}", 1)
    except StoreError as exc:
        fail(str(exc), 1)
    finally:
        store.close()
    typer.echo(
        f"wrote {target}: {about['sessions']} session(s), {about['files']} file(s), "
        f"{about['keys']} key(s)"
    )


@app.command("forget")
def forget_cmd(
    user: str = typer.Argument(..., help="The end user's id."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Forget USER everywhere: notes, sessions, messages, search rows, vectors, jobs and
    outputs, stored responses, gateway pairing, scoped keys. Cannot be undone."""
    from hermes.memory.providers.backend import ProviderError
    from hermes.users import forget_user

    user = _user_or_exit(user)
    if not yes and not typer.confirm(f"Forget user {user!r} everywhere? This cannot be undone."):
        fail("nothing was removed", 1)
    settings = settings_or_exit()
    store = _store()
    try:
        counts = forget_user(settings, store, user)
    except (StoreError, OSError) as exc:
        fail(f"forgetting {user!r} stopped: {exc}; run the command again to finish", 1)
    except ProviderError as exc:  # the last step: everything else is forgotten
        fail(f"forgetting {user!r}: {exc}", 1)
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps({"forgotten": user, **counts}))
        return
    done = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in counts.items() if n)
    typer.echo(f"forgot user {user}: {done or 'nothing was held'}")
    if sys.stdout.isatty():
        typer.echo("(a running `hermes serve` may still accept their key for a few seconds)")
