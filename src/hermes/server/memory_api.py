"""`/api/memory`: the caller's notes (MEMORY.md and USER.md) over HTTP (SPEC §13).

A change goes through exactly what the `memory` tool runs (`change_notes`: caps, duplicate
no-ops, the safety scan, the archive of entries that leave), so an app editing a user's
notes can do nothing the agent could not. The history routes live in `memory_history_api`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from hermes.memory.history import Actor, api_actor
from hermes.memory.notes import FILES, NotesError, open_notes
from hermes.memory.scan import prepare
from hermes.memory.tool import Operation, change_notes
from hermes.runtime import Runtime
from hermes.server.deps import get_runtime, get_scope, require_auth
from hermes.server.errors import APIError
from hermes.server.examples import json_example

router = APIRouter(prefix="/api/memory", tags=["memory"], dependencies=[Depends(require_auth)])

NOTES_EXAMPLE = {
    "memory": {"entries": ["Prefers metric units"], "chars": 20, "limit": 2200},
    "user": {"entries": ["Name: Alex"], "chars": 10, "limit": 1375},
}


class MemoryChange(BaseModel):
    """The memory tool's arguments: one change to one notes file."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"action": "add", "target": "user", "content": "Name: Alex"},
                {"action": "replace", "target": "user", "old_text": "Name:", "content": "Name: Al"},
                {"action": "remove", "target": "memory", "old_text": "metric"},
            ]
        },
    )
    action: Literal["add", "replace", "remove"]
    target: Literal["memory", "user"]
    content: str | None = Field(default=None, max_length=10_000)
    old_text: str | None = Field(default=None, max_length=10_000)


def _notes_json(runtime: Runtime, scope: str) -> dict[str, Any]:
    notes = open_notes(runtime.settings, scope, runtime.store)
    shown: dict[str, Any] = {}
    for target in FILES:
        state = notes.read(target)
        shown[target] = {"entries": state.entries, "chars": state.chars, "limit": state.limit}
    return shown


@router.get(
    "",
    summary="Read the notes",
    responses=json_example(NOTES_EXAMPLE),
)
async def read_notes(
    runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)
) -> dict[str, Any]:
    """Both notes of the caller's scope as they are now (a session's prompt holds the
    snapshot taken when it started)."""
    return await asyncio.to_thread(_notes_json, runtime, scope)


def _change(runtime: Runtime, scope: str, body: MemoryChange, actor: Actor) -> dict[str, Any]:
    if body.content:
        prepare(runtime.settings)  # the scan's meaning model, once per process, as the tool
    notes = open_notes(runtime.settings, scope, runtime.store)
    op = Operation(body.action, body.content, body.old_text)
    result = change_notes(notes, body.target, [op], actor)
    return {**result, **_notes_json(runtime, scope)}


@router.post(
    "",
    summary="Change the notes (the memory tool)",
    responses={
        **json_example(
            {
                "success": True,
                "target": "user",
                "message": "Added 1 entry.",
                "usage": "1% — 10/1,375 chars",
                "entry_count": 1,
                **NOTES_EXAMPLE,
            }
        ),
        400: {"description": "Refused: over the cap, no match, or the scan found a threat."},
    },
)
async def change(
    request: Request,
    body: MemoryChange,
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> dict[str, Any]:
    """`add` (content), `replace` (old_text → content) or `remove` (old_text) one entry, as
    the agent's `memory` tool does; a refusal is a 400 whose message says why (and, over the
    cap, lists the entries); nothing is written then."""
    key = getattr(request.state, "api_key", None)
    actor = api_actor(key.label or key.id if key is not None else None)
    try:
        return await asyncio.to_thread(_change, runtime, scope, body, actor)
    except NotesError as exc:
        raise APIError(400, str(exc), code="memory_refused", param="content") from None
