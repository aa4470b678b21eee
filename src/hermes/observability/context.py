"""The ids of the work in progress (request, run, session), kept in contextvars so every
log line written during a request or a turn carries them without being passed around.

A task started inside a turn (a tool, a background memory pass) inherits them, as asyncio
copies the context into each new task.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

request_id: ContextVar[str | None] = ContextVar("hermes_request_id", default=None)
run_id: ContextVar[str | None] = ContextVar("hermes_run_id", default=None)
session_id: ContextVar[str | None] = ContextVar("hermes_session_id", default=None)

_VARS: dict[str, ContextVar[str | None]] = {
    "request_id": request_id,
    "run_id": run_id,
    "session_id": session_id,
}


def current() -> dict[str, str | None]:
    """The ids now in effect, by name (None: not in a request, run or session)."""
    return {name: var.get() for name, var in _VARS.items()}


@contextmanager
def bound(**ids: str | None) -> Iterator[None]:
    """Set some ids for the block (`request_id=`, `run_id=`, `session_id=`), then restore."""
    tokens = [(_VARS[name], _VARS[name].set(value)) for name, value in ids.items()]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def bind(**ids: str | None) -> None:
    """Set ids for the rest of the current task (a run's task, which ends with its run)."""
    for name, value in ids.items():
        _VARS[name].set(value)
