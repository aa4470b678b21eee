"""`hermes profile list|create|copy|delete`: several agents from one install (SPEC §16).

Profiles live under `$HERMES_HOME/profiles/`, whatever `-p` or HERMES_PROFILE says: these
commands manage all of them from the root home.
"""

from __future__ import annotations

import json

import typer

from hermes.cli_common import fail
from hermes.config.home import ProfileError, root_home

app = typer.Typer(help="Profiles: list, create, copy or delete one.", no_args_is_help=True)


def _report(action: str, name: str, created: object) -> None:
    from hermes.profiles import Created

    assert isinstance(created, Created)
    typer.echo(f"{action} profile {name!r} at {created.home}")
    if created.copied:
        typer.echo(f"  copied: {', '.join(created.copied)}")
    left = [".env (secrets)", *(f"{key} (from config.yaml)" for key in created.dropped)]
    typer.echo(f"  not copied: {', '.join(left)}")
    typer.echo(
        f"  give it its own server key: echo 'HERMES_API_KEY=<key>' >> {created.home / '.env'}"
    )
    typer.echo(f"  use it: hermes -p {name} chat   (served at /p/{name}/v1 by `hermes serve`)")


@app.command("list")
def list_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every profile: name, home, model, whether it has a server key, its bots."""
    from hermes.profiles import describe_all

    infos = describe_all(root_home())
    if as_json:
        typer.echo(json.dumps({"profiles": [info.as_json() for info in infos]}))
        return
    for info in infos:
        if info.error:
            typer.echo(f"{info.name:<20} {info.path}  (cannot be read: {info.error})")
            continue
        key = "key" if info.has_key else "no key"
        bots = ",".join(info.gateway) or "-"
        typer.echo(f"{info.name:<20} {info.model or '-':<24} {key:<7} bots: {bots:<16} {info.path}")


@app.command("create")
def create_cmd(
    name: str = typer.Argument(..., help="The new profile's name (a-z, 0-9, _ and -)."),
    source: str | None = typer.Option(
        None,
        "--from",
        metavar="PROFILE",
        help="Start from this profile's config.yaml, SOUL.md and skills (not its notes, "
        "sessions, jobs or secrets).",
    ),
) -> None:
    """Create a profile: an empty home, or one with another profile's personality."""
    from hermes.profiles import create

    try:
        created = create(root_home(), name, source=source)
    except ProfileError as exc:
        fail(str(exc), 2)
    _report("created", name, created)


@app.command("copy")
def copy_cmd(
    source: str = typer.Argument(..., help="The profile to copy ('default': the root home)."),
    name: str = typer.Argument(..., help="The new profile's name."),
) -> None:
    """Clone a profile with its notes, users, skills, jobs and sessions (never its secrets)."""
    from hermes.profiles import copy

    try:
        created = copy(root_home(), source, name)
    except ProfileError as exc:
        fail(str(exc), 2)
    _report("copied", name, created)


@app.command("delete")
def delete_cmd(
    name: str = typer.Argument(..., help="The profile to delete."),
    yes: bool = typer.Option(False, "--yes", help="Really delete: everything in its home goes."),
) -> None:
    """Delete a profile and everything in its home (the default profile cannot be deleted)."""
    from hermes.config.home import existing_profile_home, validate_profile_name
    from hermes.profiles import delete

    try:
        home = existing_profile_home(root_home(), validate_profile_name(name))
        if not yes:
            fail(
                f"this deletes {home} (notes, sessions, skills, jobs, keys of {name!r}); "
                f"run again with --yes to do it",
                2,
            )
        shared = _shared_database(name)
        delete(root_home(), name)
    except ProfileError as exc:
        fail(str(exc), 2)
    except OSError as exc:
        fail(f"could not delete {home}: {exc.strerror}", 1)
    typer.echo(f"deleted profile {name!r} ({home})")
    if shared:
        typer.echo(
            f"  its rows stay in the PostgreSQL schema {shared}; to remove them too: "
            f'DROP SCHEMA "{shared}" CASCADE;'
        )


def _shared_database(name: str) -> str | None:
    """The PostgreSQL schema holding a profile's rows, when its store is a shared database."""
    from hermes.config.database import profile_schema
    from hermes.config.settings import ConfigError
    from hermes.profiles import profile_settings

    try:
        url = profile_settings(root_home(), name).database_url
    except ConfigError:
        return None
    return profile_schema(name) if url.startswith(("postgresql:", "postgres:")) else None
