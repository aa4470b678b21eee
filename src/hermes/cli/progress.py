"""Progress for commands that can take more than a second (import, export, reindex).

Drawn on stderr and only when stderr is a terminal, so stdout (exports, `--json`) and logs
stay exactly as they were. Rich is imported only then: a command that draws nothing (piped,
or `sessions list`, which imports this module with its group) does not pay its import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

Advance = Callable[[int], None]


def _console() -> Console | None:
    if not sys.stderr.isatty():
        return None
    from rich.console import Console

    return Console(stderr=True)


@contextmanager
def progress(
    description: str, total: int | None = None, *, console: Console | None = None
) -> Iterator[Advance]:
    """Yields `advance(n)`; a bar when the total is known, a counting spinner when not."""
    console = console or _console()
    if console is None:
        yield lambda n: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    else:
        columns.append(TextColumn("{task.completed:,.0f}"))
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
