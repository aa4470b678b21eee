"""`/api/sessions`: the caller's transcripts over HTTP (SPEC §13) — list and search, read,
rename, delete, fork, and export/import in the JSONL format of `hermes sessions export`.

Every route works in the caller's scope (`get_scope`; a namespaced session id may claim one,
as on a turn). Session ids may hold `/` (`repo:facebook/react`), so the id is a path
parameter that takes slashes; `/messages`, `/fork` and `/export` after it name those routes.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from hermes.memory import embeddings
from hermes.recall.component import Recall
from hermes.recall.ranking import SemanticSearch
from hermes.runtime import Runtime
from hermes.server.deps import (
    get_runtime,
    get_scope,
    require_auth,
    scope_with_session,
    session_id_or_400,
)
from hermes.server.errors import APIError
from hermes.server.examples import json_example
from hermes.server.session_views import (
    forked,
    message_page,
    search_sessions,
    session_json,
)
from hermes.store.base import SessionRecord, Store

router = APIRouter(prefix="/api/sessions", tags=["sessions"], dependencies=[Depends(require_auth)])

SESSION_EXAMPLE = {
    "id": "support:981",
    "title": "Printer setup",
    "source": "api",
    "started_at": 1767225600.0,
    "updated_at": 1767229200.0,
    "ended_at": None,
    "parent_session_id": None,
    "message_count": 12,
    "input_tokens": 5400,
    "output_tokens": 820,
}
MAX_IMPORT_PROBLEMS = 20


class SessionPatch(BaseModel):
    """PATCH body: what can be changed of a session (its title; null clears it)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"title": "Trip"}]})
    title: str | None = Field(..., max_length=200)


class ForkBody(BaseModel):
    """POST …/fork body (optional): the new session's id and title."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"id": "support:981-b", "title": "B"}]}
    )
    id: str | None = None
    title: str | None = Field(default=None, max_length=200)


# ---------------------------------------------------------------------------- plumbing


@dataclass(frozen=True, slots=True)
class Target:
    """The session a route's path names, and the scope it lives in."""

    id: str
    scope: str


async def _target(request: Request, session_id: str, scope: str = Depends(get_scope)) -> Target:
    """The path's session id, checked, in the caller's scope (or the one it claims)."""
    session_id = session_id_or_400(session_id)
    return Target(session_id, scope_with_session(request, scope, session_id))


def _not_found(session_id: str) -> APIError:
    return APIError(
        404,
        f"No session {session_id!r} in your scope; GET /api/sessions lists them.",
        code="session_not_found",
        param="session_id",
    )


async def _record(store: Store, scope: str, session_id: str) -> SessionRecord:
    record = await asyncio.to_thread(store.get_session, scope, session_id)
    if record is None:
        raise _not_found(session_id)
    return record


async def _meaning(runtime: Runtime) -> SemanticSearch:
    """The runtime's semantic index (loading the model on first use), or a 400 saying why
    search by meaning is off and what turns it on."""
    recall = runtime.services.find(Recall)
    why = "this server has no recall component"
    if recall is not None:
        try:
            index = await asyncio.to_thread(recall.semantic, wait=True)
        except embeddings.EmbeddingsUnavailableError as exc:
            index, why = None, str(exc)
        else:
            why = f"semantic search is {embeddings.status(runtime.settings)}"
            if runtime.store.vectors is None:
                why = "this store keeps no vectors"
        if index is not None:
            return index
    raise APIError(
        400,
        f"Search by meaning is off ({why}); set search.embeddings in config.yaml "
        "(see `hermes doctor`), or search by words (mode=words).",
        code="meaning_search_off",
        param="mode",
    )


# ------------------------------------------------------------------------------ routes


@router.get(
    "",
    summary="List or search sessions",
    responses=json_example({"sessions": [SESSION_EXAMPLE]}),
)
async def list_sessions(
    limit: int = Query(50, ge=1, le=500, description="Sessions to return."),
    offset: int = Query(0, ge=0, le=1_000_000, description="Sessions to skip."),
    q: str | None = Query(
        None, max_length=1000, description="Words to find in titles and messages."
    ),
    source: str | None = Query(None, max_length=64, description="Only this source (api, cli…)."),
    mode: Literal["words", "meaning"] = Query(
        "words", description="With `q`: match its words, or its meaning too (semantic search)."
    ),
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> dict[str, Any]:
    """Most recently active first; with `q`, sessions whose title or messages match, best
    first, each with the best-matching message's snippet; `mode=meaning` also finds messages
    that say the same thing in other words (needs `search.embeddings`)."""
    store = runtime.store
    if q is not None and q.strip():
        semantic = await _meaning(runtime) if mode == "meaning" else None
        found = await asyncio.to_thread(
            search_sessions, store, scope, q.strip(), source, limit, offset, semantic
        )
        return {"sessions": found}
    records = await asyncio.to_thread(
        lambda: store.list_sessions(scope, limit=limit, offset=offset, source=source or None)
    )
    return {"sessions": [session_json(r) for r in records]}


@router.post(
    "/import",
    summary="Import sessions (JSONL)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/x-ndjson": {
                    "schema": {"type": "string"},
                    "example": '{"id": "trip", "title": "Trip", "messages": '
                    '[{"role": "user", "content": "Book Lisbon"}]}\n',
                }
            },
        }
    },
    responses=json_example({"imported": 1, "skipped": 0, "messages": 1}),
)
async def import_jsonl(
    request: Request,
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> dict[str, int]:
    """One session per line, as `hermes sessions export` writes; sessions whose id the scope
    has already are skipped; a malformed file imports nothing and the error lists its lines."""
    # the transfer format's models load with the first import or export, not with the server
    from hermes.store.transfer import ImportFormatError, import_sessions, parse_jsonl

    raw = await request.body()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise APIError(
            400, "The body is not UTF-8 text; send JSONL.", code="invalid_body"
        ) from None
    try:
        sessions = parse_jsonl(text.splitlines())
    except ImportFormatError as exc:
        shown = "; ".join(exc.problems[:MAX_IMPORT_PROBLEMS])
        raise APIError(
            400,
            f"{len(exc.problems)} malformed line(s), nothing was imported: {shown}.",
            code="invalid_jsonl",
        ) from None
    if not sessions:
        raise APIError(
            400, "The body holds no sessions (one JSON object per line).", code="invalid_jsonl"
        )
    for s in sessions:
        scope_with_session(request, scope, s.id)  # a namespaced id must not claim another scope
    report = await asyncio.to_thread(import_sessions, runtime.store, scope, sessions)
    return {"imported": report.imported, "skipped": report.skipped, "messages": report.messages}


@router.get(
    "/{session_id:path}/messages",
    summary="Read a session's messages",
    responses=json_example(
        {
            "messages": [
                {
                    "index": 0,
                    "role": "user",
                    "content": "Hi",
                    "timestamp": 1767225600.0,
                    "hidden": False,
                    "compressed": False,
                }
            ],
            "compressions": [{"seq": 1, "head_end": 0, "upto_index": 4, "summary": "…"}],
            "hidden_ranges": [[6, 8]],
        }
    ),
)
async def messages(
    target: Target = Depends(_target),
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=10_000_000),
    runtime: Runtime = Depends(get_runtime),
) -> dict[str, Any]:
    """Messages in order; `compressed` marks those summarised in the prompt (the summary is
    in `compressions`), `hidden` those taken back with /undo (kept, not in the prompt)."""
    session_id, scope = target.id, target.scope
    await _record(runtime.store, scope, session_id)
    return await asyncio.to_thread(message_page, runtime.store, scope, session_id, offset, limit)


@router.post(
    "/{session_id:path}/fork",
    status_code=201,
    summary="Fork a session",
    responses=json_example({"session": SESSION_EXAMPLE}, 201),
)
async def fork(
    request: Request,
    body: ForkBody | None = None,
    target: Target = Depends(_target),
    runtime: Runtime = Depends(get_runtime),
) -> dict[str, Any]:
    """A new session holding a copy of this one's messages (its parent is this one), to go
    on from the same point in another direction."""
    session_id, scope = target.id, target.scope
    body = body or ForkBody()
    new_id = (
        session_id_or_400(body.id, "id") if body.id else f"{session_id}-fork-{uuid.uuid4().hex[:6]}"
    )
    if scope_with_session(request, scope, new_id) != scope:
        raise APIError(
            400,
            f"The fork's id {new_id!r} names another scope.",
            code="conflicting_scope",
            param="id",
        )
    original = await _record(runtime.store, scope, session_id)
    record = await asyncio.to_thread(forked, runtime.store, scope, original, new_id, body.title)
    if record is None:
        raise APIError(
            409,
            f"Session {new_id!r} already exists; pick another id.",
            code="session_exists",
            param="id",
        )
    return {"session": session_json(record)}


@router.get(
    "/{session_id:path}/export",
    summary="Export a session (JSONL)",
    response_class=Response,
    responses={200: {"content": {"application/x-ndjson": {"example": '{"id": "trip", …}\n'}}}},
)
async def export(
    target: Target = Depends(_target), runtime: Runtime = Depends(get_runtime)
) -> Response:
    """One line, exactly as `hermes sessions export --session ID` writes it."""
    from hermes.store.transfer import export_sessions

    session_id, scope = target.id, target.scope
    lines = await asyncio.to_thread(
        lambda: list(export_sessions(runtime.store, scope, [session_id]))
    )
    if not lines:
        raise _not_found(session_id)
    return Response("".join(line + "\n" for line in lines), media_type="application/x-ndjson")


@router.get(
    "/{session_id:path}",
    summary="Get a session",
    responses=json_example({"session": SESSION_EXAMPLE}),
)
async def get_session(
    target: Target = Depends(_target), runtime: Runtime = Depends(get_runtime)
) -> dict[str, Any]:
    """The session's record: title, source, times, counts, parent."""
    session_id, scope = target.id, target.scope
    return {"session": session_json(await _record(runtime.store, scope, session_id))}


@router.patch(
    "/{session_id:path}",
    summary="Rename a session",
    responses=json_example({"session": SESSION_EXAMPLE}),
)
async def patch_session(
    body: SessionPatch,
    target: Target = Depends(_target),
    runtime: Runtime = Depends(get_runtime),
) -> dict[str, Any]:
    """Set the title (null clears it)."""
    session_id, scope = target.id, target.scope
    title = body.title.strip() or None if body.title is not None else None
    store = runtime.store
    if not await asyncio.to_thread(store.set_session_title, scope, session_id, title):
        raise _not_found(session_id)
    return {"session": session_json(await _record(store, scope, session_id))}


@router.delete(
    "/{session_id:path}",
    summary="Delete a session",
    responses=json_example({"id": "support:981", "deleted": True}),
)
async def delete_session(
    target: Target = Depends(_target), runtime: Runtime = Depends(get_runtime)
) -> dict[str, Any]:
    """The session, its messages and their search rows and vectors."""
    session_id, scope = target.id, target.scope
    if not await asyncio.to_thread(runtime.store.delete_session, scope, session_id):
        raise _not_found(session_id)
    runtime.agent.end_session(scope, session_id)
    return {"id": session_id, "deleted": True}
