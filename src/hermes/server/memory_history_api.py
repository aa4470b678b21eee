"""`/api/memory/history` and `/api/memory/revert` (SPEC §13): the caller's memory history.

Always the caller's scope (a scoped key sees only its user's versions; another scope's
version id is a 404, as if it did not exist). Hand edits are recorded before a list is
shown. `?entry=TEXT` answers "why does it think that?": the versions that introduced the
text, each with the session and message index the dashboard can open.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from hermes.memory.history import api_actor, detail, is_target, summary
from hermes.runtime import Runtime
from hermes.server.deps import get_runtime, get_scope, require_auth
from hermes.server.errors import APIError
from hermes.store.api_keys import ApiKeyRecord
from hermes.store.base import NoteVersion
from hermes.versioned.revert import RevertError, VersionNotFoundError, find_version, revert, why
from hermes.versioned.targets import TargetError, audit

router = APIRouter(prefix="/api/memory", dependencies=[Depends(require_auth)])


STORED_ID_MAX = 2**63 - 1  # a version id is a 64-bit integer in both stores: larger is a 422


class RevertBody(BaseModel):
    """POST /api/memory/revert: the version to undo (from the history)."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=-STORED_ID_MAX - 1, le=STORED_ID_MAX)


def _listed(version: NoteVersion) -> dict[str, Any]:
    out = summary(version)
    if version.session_id is not None:
        index = f"?offset={version.turn}&limit=1" if version.turn is not None else ""
        out["link"] = f"/api/sessions/{quote(version.session_id, safe='')}/messages{index}"
    return out


def _target_or_400(target: str | None) -> str | None:
    if target is not None and not is_target(target):
        raise APIError(
            400,
            f"target {target!r} is not one of memory, user, soul or skill:NAME.",
            code="invalid_target",
            param="target",
        )
    return target


def _refused(exc: Exception) -> APIError:
    if isinstance(exc, VersionNotFoundError):
        return APIError(404, f"{exc}.", code="version_not_found", param="version")
    if isinstance(exc, TargetError):
        return APIError(400, f"{exc}.", code="invalid_target", param="target")
    return APIError(409, f"{exc}.", code="revert_conflict", param="version")


@router.get("/history")
async def history(
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
    target: str | None = Query(None, description="memory, user, soul or skill:NAME"),
    limit: int = Query(50, ge=1, le=1000),
    entry: str | None = Query(None, max_length=2000, description="text of an entry: its origin"),
) -> dict[str, Any]:
    _target_or_400(target)
    if entry is not None and not entry.strip():
        raise APIError(400, "entry is empty; give part of an entry's text.", param="entry")

    def read() -> list[NoteVersion]:
        audit(runtime.settings, runtime.store, scope, target)
        if entry is not None:
            return why(runtime.store, runtime.settings, scope, entry, target)[:limit]
        versions = runtime.store.note_history
        if versions is None:
            raise TargetError("this store keeps no memory history")
        return versions.list_versions(scope, target=target, limit=limit)

    try:
        found = await asyncio.to_thread(read)
    except (RevertError, TargetError) as exc:
        raise _refused(exc) from None
    return {"versions": [_listed(v) for v in found]}


@router.get("/history/{version_id}")
async def version_detail(
    version_id: int = Path(ge=-STORED_ID_MAX - 1, le=STORED_ID_MAX),
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> dict[str, Any]:
    try:
        found = await asyncio.to_thread(
            find_version, runtime.store, runtime.settings, scope, version_id
        )
    except RevertError as exc:
        raise _refused(exc) from None
    return {**detail(found), **_listed(found)}


@router.post("/revert")
async def revert_version(
    body: RevertBody,
    request: Request,
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> dict[str, Any]:
    key: ApiKeyRecord | None = getattr(request.state, "api_key", None)
    actor = api_actor(key.label or key.id if key is not None else None)
    try:
        new = await asyncio.to_thread(
            revert, runtime.settings, runtime.store, scope, body.version, actor
        )
    except (RevertError, TargetError) as exc:
        raise _refused(exc) from None
    return {"version": _listed(new)}
