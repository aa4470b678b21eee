"""`hermes memory`: show, edit and forget the notes (MEMORY.md, USER.md) of a scope."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import typer

from hermes.cli.memory_history import register as register_history
from hermes.cli_common import fail, scope_or_exit, settings_or_exit
from hermes.config.settings import Settings
from hermes.memory.history import CLI, forget_history
from hermes.memory.notes import (
    FILES,
    NotesStore,
    open_notes,
    parse_entries,
    read_text,
    usage_chars,
    usage_text,
)
from hermes.memory.scan import describe, prepare, scan_text
from hermes.runtime import open_store
from hermes.store.base import Store, StoreError
from hermes.store.urls import backend_of

app = typer.Typer(help="Show, edit and forget what Hermes remembers.", no_args_is_help=True)

UserOption = typer.Option(None, "--user", help="End-user scope (default: the owner's).")
register_history(app)  # log, diff, revert, why (hermes.cli.memory_history)


@contextlib.contextmanager
def _notes(settings: Settings, scope: str) -> Iterator[NotesStore]:
    """The scope's notes: files in the home, or documents in a shared PostgreSQL database;
    either way with their history (kept in the store: `hermes memory log`)."""
    if backend_of(settings.database_url) == "sqlite":
        try:
            state = open_store(settings)
        except StoreError:  # the notes are files: only their history is unavailable
            yield open_notes(settings, scope)
            return
        try:
            yield open_notes(settings, scope, state)
        finally:
            state.close()
        return
    store = _store_or_exit(settings)
    try:
        yield open_notes(settings, scope, store)
    except StoreError as exc:
        fail(str(exc), 1)
    finally:
        store.close()


def _store_or_exit(settings: Settings) -> Store:
    try:
        return open_store(settings)
    except StoreError as exc:
        fail(str(exc), 1)


@app.command("show")
def show_cmd(
    user: str | None = UserOption,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Print the notes of a scope with their usage."""
    scope = scope_or_exit(user)
    settings = settings_or_exit()
    with _notes(settings, scope) as notes:
        states = [notes.read(target) for target in FILES]
        where = notes.where
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "scope": scope,
                    **{
                        s.target: {
                            "path": str(s.path),
                            "usage": s.usage,
                            "chars": s.chars,
                            "limit": s.limit,
                            "entries": s.entries,
                        }
                        for s in states
                    },
                },
                ensure_ascii=False,
            )
        )
        return
    for state in states:
        typer.echo(f"── {state.path.name} [{state.usage}]  {where}")
        typer.echo("\n§\n".join(state.entries) if state.entries else "(empty)")
        typer.echo("")


def _problems(text: str, limit: int) -> list[str]:
    entries = parse_entries(text)
    problems = []
    chars = usage_chars(entries)
    if chars > limit:
        problems.append(
            f"over the limit ({usage_text(chars, limit)}): the memory tool will "
            "refuse new entries until it is shortened"
        )
    for n, entry in enumerate(entries, start=1):
        threats = scan_text(entry)
        if threats:
            problems.append(
                f"entry {n} looks like {describe(threats)}: it will be blocked from the prompt"
            )
    return problems


def _editor() -> list[str]:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        fail("set $EDITOR (for example EDITOR=nano) to edit notes", 2)
    return shlex.split(editor)


def _run_editor(command: list[str], path: Path) -> None:
    """Run the editor on `path`; on failure remove it (nothing is saved) and exit."""
    try:
        code = subprocess.call([*command, str(path)])
    except OSError as exc:
        path.unlink(missing_ok=True)
        fail(f"cannot start the editor {command[0]!r}: {exc.strerror}", 2)
    if code != 0:
        path.unlink(missing_ok=True)
        fail(f"the editor exited with status {code}; nothing was saved", 1)


@app.command("edit")
def edit_cmd(
    user: str | None = UserOption,
    target: str = typer.Option("memory", "--target", help="memory (MEMORY.md) or user (USER.md)."),
) -> None:
    """Open the notes in $EDITOR; the result is checked and saved atomically."""
    scope = scope_or_exit(user)
    if target not in FILES:
        fail(f"--target must be 'memory' or 'user', not {target!r}", 2)
    settings = settings_or_exit()
    command = _editor()
    prepare(settings)  # the edited text is scanned by meaning too
    with _notes(settings, scope) as notes:
        _edit(notes, target, command, settings.home)


def _edit(notes: NotesStore, target: str, command: list[str], home: Path) -> None:
    """Edit a copy, then store it only if the note did not change meanwhile."""
    path = notes.path(target)
    original, malformed = notes.read_raw(target)
    folder = path.parent if path.is_absolute() else home
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f"{path.name}.edit-", suffix=".md", dir=folder)
    tmp = Path(tmp_name)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(original)
    _run_editor(command, tmp)
    edited, _ = read_text(tmp)
    if edited == original and not malformed:
        tmp.unlink()
        typer.echo("No changes.")
        return
    if not notes.replace_raw(target, original, edited, CLI):
        fail(
            f"{path.name} changed while you were editing (the agent wrote to it); your "
            f"version is kept at {tmp}. Run `hermes memory edit` again.",
            1,
        )
    if malformed:
        typer.echo(f"the old {path.name} was not valid UTF-8; a copy was kept beside it")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    for problem in _problems(edited, notes.limit(target)):
        typer.echo(f"hermes: warning: {path.name}: {problem}", err=True)
    state = notes.read(target)
    typer.echo(f"saved {path.name}: {len(state.entries)} entries, {state.usage}")


@app.command("forget")
def forget_cmd(
    user: str = typer.Option(..., "--user", help="The end user whose memory to erase."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Erase everything remembered about one end user: notes and conversations."""
    scope = scope_or_exit(user)
    settings = settings_or_exit()
    store = _store_or_exit(settings)
    try:
        sessions = len(store.list_sessions(scope, limit=1_000_000))
        if not yes and not typer.confirm(
            f"Forget user {user!r}: their notes and {sessions} conversation(s)? This cannot be undone."
        ):
            fail("nothing was removed", 1)
        removed = store.delete_scope(scope)
        open_notes(settings, scope, store).erase()
        forget_history(store, scope)
    except StoreError as exc:
        fail(str(exc), 1)
    finally:
        store.close()
    typer.echo(f"forgot user {user}: removed their notes and {removed} session(s)")


# -- external memory provider (SPEC §15): setup, status, off ---------------------------------

ProviderArg = typer.Argument(None, help="honcho, mem0 or supermemory (asked when omitted).")


@app.command("setup")
def setup_cmd(
    provider: str | None = ProviderArg,
    base_url: str | None = typer.Option(None, "--base-url", help="The provider's API address."),
    api_key: str | None = typer.Option(None, "--api-key", help="Its key (stored in .env, 0600)."),
) -> None:
    """Choose an external memory provider, configure it and connect once to check it."""
    from hermes.config.settings import ConfigError, load_settings
    from hermes.memory.providers import NAMES
    from hermes.memory.providers.backend import ProviderError
    from hermes.memory.providers.configure import KEY_VARS, connect_once, save_choice, save_key

    settings = settings_or_exit()
    name = provider or typer.prompt(f"Provider ({', '.join(NAMES)})")
    if name not in NAMES:
        fail(f"{name!r} is not a memory provider: choose one of {', '.join(NAMES)}", 2)
    if name in KEY_VARS and api_key is None and not base_url:
        api_key = typer.prompt(f"{KEY_VARS[name]}", hide_input=True, default="", show_default=False)
    save_choice(settings.home, name, {"base_url": base_url} if base_url else {})
    if api_key and name in KEY_VARS:
        save_key(settings.home, name, api_key)
    try:
        settings = load_settings(settings.home)
        said = connect_once(settings)
    except (ConfigError, ProviderError) as exc:
        fail(f"saved memory.provider: {name}, but it does not work yet: {exc}", 1)
    typer.echo(f"memory.provider: {name} — {said}")


@app.command("status")
def status_cmd() -> None:
    """Which external memory provider is on, and whether it answers."""
    from hermes.memory.providers.backend import ProviderError
    from hermes.memory.providers.configure import connect_once

    settings = settings_or_exit()
    name = settings.memory.provider
    if name is None:
        typer.echo("external memory provider: none (notes and search only; `hermes memory setup`)")
        return
    try:
        said = connect_once(settings)
    except ProviderError as exc:
        fail(f"memory.provider: {name} — not working: {exc}", 1)
    typer.echo(f"memory.provider: {name} — {said}")


@app.command("off")
def off_cmd() -> None:
    """Turn the external memory provider off (what it stored stays at the provider)."""
    from hermes.memory.providers.configure import save_choice

    settings = settings_or_exit()
    save_choice(settings.home, None, {})
    typer.echo("memory.provider: none — notes and search go on as before")
