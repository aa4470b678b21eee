"""`hermes memory log|diff|revert|why`: the history of a scope's notes, SOUL.md and skills.

Every change is a version (who, when, why); hand edits are found and recorded before the
history is shown. A revert is itself a version, so it can be reverted too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import typer

from hermes.cli_common import fail, scope_or_exit, settings_or_exit
from hermes.config.settings import Settings
from hermes.memory.history import CLI, detail, is_target, summary, unified_diff
from hermes.runtime import open_store
from hermes.store.base import NoteVersion, Store, StoreError
from hermes.versioned.revert import RevertError, find_version, revert, why
from hermes.versioned.targets import TargetError, audit

UserOption = typer.Option(None, "--user", help="End-user scope (default: the owner's).")
JsonOption = typer.Option(False, "--json", help="Machine-readable output.")
REASON_SHOWN = 70
T = TypeVar("T")


def _store() -> Store:
    try:
        return open_store(settings_or_exit())
    except StoreError as exc:
        fail(str(exc), 1)


def _with_store(work: Callable[[Settings, Store], T], errors: tuple[type[Exception], ...]) -> T:
    """`work` on the home's store, closed after; one of `errors` exits 1 with its sentence."""
    settings = settings_or_exit()
    store = _store()
    try:
        return work(settings, store)
    except errors as exc:
        fail(str(exc), 1)
    finally:
        store.close()


def _target_or_exit(target: str | None) -> None:
    if target is not None and not is_target(target):
        fail(f"--target must be memory, user, soul or skill:NAME, not {target!r}", 2)


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _who(v: NoteVersion) -> str:
    where = ""
    if v.session_id:
        after = " after session" if v.actor == "review" else " session"
        where = f"{after} {v.session_id}" + (f" message {v.turn}" if v.turn is not None else "")
    key = f" key {v.key_name}" if v.key_name else ""
    return f"{v.actor}{where}{key}"


def _line(v: NoteVersion) -> str:
    reason = " ".join((v.reason or "").split())
    if len(reason) > REASON_SHOWN:
        reason = reason[: REASON_SHOWN - 1] + "…"
    undo = f" (reverts #{v.reverts})" if v.reverts else ""
    return f"#{v.id:<5} {_when(v.at)}  {v.target:<12} {_who(v)}{undo}  {reason}".rstrip()


def log_cmd(
    user: str | None = UserOption,
    target: str | None = typer.Option(
        None, "--target", help="memory, user, soul or skill:NAME (default: all)."
    ),
    limit: int = typer.Option(50, "--limit", min=1, max=10_000, help="Versions shown."),
    as_json: bool = JsonOption,
) -> None:
    """List the versions of the notes (newest first): who changed what, when and why."""
    scope = scope_or_exit(user)
    _target_or_exit(target)

    def listed(settings: Settings, store: Store) -> list[NoteVersion]:
        audit(settings, store, scope, target)
        assert store.note_history is not None
        return store.note_history.list_versions(scope, target=target, limit=limit)

    versions = _with_store(listed, (TargetError, StoreError))
    if as_json:
        typer.echo(json.dumps({"versions": [summary(v) for v in versions]}, ensure_ascii=False))
        return
    if not versions:
        typer.echo("No versions yet: nothing has changed since history began.")
    for v in versions:
        typer.echo(_line(v))


def _version(scope: str, version: int) -> NoteVersion:
    return _with_store(
        lambda settings, store: find_version(store, settings, scope, version), (RevertError,)
    )


def diff_cmd(
    version: int = typer.Argument(..., help="The version id (from `hermes memory log`)."),
    user: str | None = UserOption,
    as_json: bool = JsonOption,
) -> None:
    """Show what one version changed, as a unified diff."""
    v = _version(scope_or_exit(user), version)
    if as_json:
        typer.echo(json.dumps(detail(v), ensure_ascii=False))
        return
    typer.echo(_line(v))
    typer.echo(unified_diff(v) or "(no textual change)", nl=False)


def revert_cmd(
    version: int = typer.Argument(..., help="The version to undo (from `hermes memory log`)."),
    user: str | None = UserOption,
) -> None:
    """Undo one version; the revert is recorded as a new version (and can be reverted)."""
    scope = scope_or_exit(user)
    new = _with_store(
        lambda settings, store: revert(settings, store, scope, version, CLI),
        (RevertError, TargetError, StoreError),
    )
    typer.echo(f"reverted version {version} of {new.target}: recorded as version {new.id}")


def why_cmd(
    text: str = typer.Argument(..., help="An entry's text, or part of it."),
    user: str | None = UserOption,
    target: str | None = typer.Option(None, "--target", help="Look only in this target."),
    as_json: bool = JsonOption,
) -> None:
    """Find the change that introduced an entry, and the session and message behind it."""
    scope = scope_or_exit(user)
    _target_or_exit(target)

    def traced(settings: Settings, store: Store) -> list[NoteVersion]:
        audit(settings, store, scope, target)
        return why(store, settings, scope, text, target)

    found = _with_store(traced, (RevertError, TargetError, StoreError))
    if as_json:
        typer.echo(json.dumps({"versions": [summary(v) for v in found]}, ensure_ascii=False))
        return
    if not found:
        fail(f"no recorded change introduced {text!r}", 1)
    first = found[0]
    typer.echo(f"{text!r} came in with version {first.id}: {_line(first)}")
    for older in found[1:]:
        typer.echo(f"  earlier: {_line(older)}")


def register(app: typer.Typer) -> None:
    """Add the history commands to `hermes memory`."""
    app.command("log")(log_cmd)
    app.command("diff")(diff_cmd)
    app.command("revert")(revert_cmd)
    app.command("why")(why_cmd)
