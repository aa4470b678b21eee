"""Notes files that could not be read, for the log and `/health`.

An unreadable MEMORY.md or USER.md (a directory, a symlink loop, no permission) must not
fail every turn of its scope: the turn goes on without those notes, the problem is logged
once per file, and `/health` reports the notes as degraded until the file reads again.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.runtime import Runtime

log = logging.getLogger(__name__)

_problems: dict[str, str] = {}
_guard = threading.Lock()


def record_unreadable(path: str, reason: str) -> None:
    with _guard:
        first = path not in _problems
        _problems[path] = reason
    if first:
        log.warning("notes file %s cannot be read (%s); turns go on without it", path, reason)


def record_readable(path: str) -> None:
    if path in _problems:
        with _guard:
            _problems.pop(path, None)


async def notes_health(runtime: Runtime) -> dict[str, Any]:
    """`ok`, or `degraded` with how many notes files cannot be read and why (file names only:
    /health is unauthenticated, and paths name users)."""
    with _guard:
        problems = dict(_problems)
    if not problems:
        return {"status": "ok"}
    names = sorted({p.rsplit("/", 1)[-1] for p in problems})
    first = next(iter(problems.values()))
    return {
        "status": "degraded",
        "reason": f"{len(problems)} notes file(s) cannot be read ({', '.join(names)}: {first}); "
        "turns go on without them",
    }
