"""Shared CLI plumbing: settings loading with readable errors, scope from --user."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn, TypeVar

import typer

from hermes.config.settings import ConfigError, Settings, load_settings
from hermes.scopes import InvalidIdError, scope_for_user

T = TypeVar("T")


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line to stderr and exit non-zero: the CLI never shows a traceback for bad input."""
    typer.echo(f"hermes: {message}", err=True)
    raise typer.Exit(code)


def settings_or_exit() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        fail(str(exc), 2)


def scope_or_exit(user: str | None) -> str:
    try:
        return scope_for_user(user)
    except InvalidIdError as exc:
        fail(str(exc), 2)


def parse_file_or_exit(
    path: Path,
    parse: Callable[[Iterable[str]], T],
    format_error: type[Exception],
    consequence: str,
) -> T:
    """Parse a line-oriented input file ('-' = stdin); bad input ends the command with the
    problems listed by line number, never a traceback."""
    try:
        if str(path) == "-":
            return parse(sys.stdin)
        with path.open(encoding="utf-8-sig") as fh:
            return parse(fh)
    except (FileNotFoundError, IsADirectoryError):
        fail(f"{path}: no such file", 2)
    except UnicodeDecodeError:
        fail(f"{path}: not UTF-8 text", 2)
    except format_error as exc:
        problems: list[str] = getattr(exc, "problems", [str(exc)])
        for problem in problems[:20]:
            typer.echo(f"hermes: {path}: {problem}", err=True)
        fail(f"{len(problems)} malformed line(s); {consequence}", 2)
