"""`hermes skills list|show|install PATH|remove NAME`: the skill library for people."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from hermes.cli_common import fail, settings_or_exit
from hermes.config.settings import Settings
from hermes.memory.history import CLI, history_for
from hermes.skills import manage
from hermes.skills.store import library_for
from hermes.store.base import DEFAULT_SCOPE, Store, StoreError

app = typer.Typer(
    help="The skill library: procedures the agent loads on demand.", no_args_is_help=True
)


@app.command("list")
def list_skills(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List installed skills (and any SKILL.md that cannot be read, with file and line)."""
    scan = library_for(settings_or_exit()).scan()
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "skills": [
                        {
                            "name": s.name,
                            "category": s.category,
                            "description": s.description,
                            "version": s.version,
                            "path": str(s.path),
                        }
                        for s in scan.skills
                    ],
                    "problems": [str(p) for p in scan.problems],
                },
                indent=2,
            )
        )
        return
    if not scan.skills:
        typer.echo("No skills installed.")
    for s in scan.skills:
        typer.echo(f"{s.qualified_name:40} {s.description}")
    for problem in scan.problems:
        typer.echo(f"hermes: skipped {problem}", err=True)


@app.command("show")
def show(name: str = typer.Argument(..., help="Skill name or category/name.")) -> None:
    """Print a skill's SKILL.md and list its files."""
    library = library_for(settings_or_exit())
    skill = library.find(name)
    if skill is None:
        problem = library.problem_for(name)
        fail(
            str(problem) if problem else f"there is no skill named {name!r} (hermes skills list)", 1
        )
    typer.echo(skill.path.read_text(encoding="utf-8-sig").rstrip())
    files = skill.files()
    if files:
        typer.echo("\nFiles:\n" + "\n".join(f"  {f}" for f in files))


@app.command("install")
def install(
    path: Path = typer.Argument(..., help="A skill directory (with SKILL.md) or a SKILL.md file."),
    category: str | None = typer.Option(None, "--category", "-c", help="Category folder."),
    replace: bool = typer.Option(
        False, "--replace", help="Replace an installed skill of that name."
    ),
) -> None:
    """Install a skill from a local directory after checking its format and content."""
    if not path.exists():
        fail(f"{path}: no such file or directory", 2)
    settings = settings_or_exit()
    try:
        with _recorded(settings) as rec:
            skill = manage.install(library_for(settings), path, category, replace=replace, **rec)
    except manage.SkillWriteError as exc:
        fail(str(exc), 1)
    typer.echo(f"Installed {skill.qualified_name} at {skill.directory}")


@app.command("remove")
def remove(name: str = typer.Argument(..., help="Skill name or category/name.")) -> None:
    """Delete an installed skill and its files."""
    settings = settings_or_exit()
    try:
        with _recorded(settings) as rec:
            skill = manage.delete(library_for(settings), name, **rec)
    except manage.SkillWriteError as exc:
        fail(str(exc), 1)
    typer.echo(f"Removed {skill.qualified_name}")


@contextlib.contextmanager
def _recorded(settings: Settings) -> Iterator[dict[str, Any]]:
    """The owner's memory history for a SKILL.md change made here (`hermes memory log`); a
    store that cannot be opened only costs the record, never the change."""
    from hermes.runtime import open_store

    store: Store | None
    try:
        store = open_store(settings)
    except StoreError:
        store = None
    try:
        history = history_for(store, DEFAULT_SCOPE, settings.memory.history_retention)
        yield {"history": history, "actor": CLI} if history is not None else {}
    finally:
        if store is not None:
            store.close()
