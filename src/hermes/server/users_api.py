"""`/api/users`: the end users Hermes holds something of, an archive of one, and forgetting
one everywhere (SPEC §13). Admin only: the server key (or an open loopback server); a scoped
key is one user and gets 403 here, whoever it names."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from fastapi import APIRouter, Depends, Path, Request
from starlette.responses import StreamingResponse

from hermes.memory.providers.backend import ProviderError
from hermes.runtime import Runtime
from hermes.scopes import InvalidIdError, scope_for_user, validate_id
from hermes.server.deps import get_runtime, require_auth
from hermes.server.errors import APIError
from hermes.server.examples import json_example
from hermes.store.api_keys import ApiKeyRecord
from hermes.users import forget_user, list_users

router = APIRouter(prefix="/api/users", tags=["users"], dependencies=[Depends(require_auth)])

UserId = Path(
    ...,
    description="The end user's id, as sent in X-Hermes-User-Id or bound to a scoped key.",
    examples=["alice"],
)
CHUNK = 64 * 1024


def _route_of(request: Request) -> str:
    """The route as declared (`/api/gateway/pairing/{code}/approve`): the path a caller
    sent may carry values (a pairing code) that an error message must not repeat."""
    return str(getattr(request.scope.get("route"), "path", "") or request.url.path)


async def require_admin(request: Request) -> None:
    """The server key's holder (the owner) only: a scoped key acts as one end user."""
    record: ApiKeyRecord | None = getattr(request.state, "api_key", None)
    if record is not None:
        raise APIError(
            403,
            f"{request.method} {_route_of(request)} needs the server key (server.api_key): a "
            "scoped key acts as its one user and reaches only that user's data.",
            "permission_error",
            "admin_only",
        )


def _user(user_id: str) -> str:
    try:
        return validate_id(user_id, what="user id")
    except InvalidIdError as exc:
        raise APIError(400, f"{exc}.", code="invalid_user_id", param="id") from None


@router.get(
    "",
    summary="List end users",
    dependencies=[Depends(require_admin)],
    responses=json_example(
        {"users": [{"id": "alice", "sessions": 3, "messages": 42, "last_active": 1767225600.0}]}
    ),
)
async def users(runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """Every end user with sessions, scoped keys, jobs or stored notes (never the owner)."""
    found = await asyncio.to_thread(list_users, runtime.settings, runtime.store)
    return {"users": [u.as_dict() for u in found]}


@router.get(
    "/{user_id}/export",
    summary="Export everything of one user (zip)",
    dependencies=[Depends(require_admin)],
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/zip": {}},
            "description": "user.json, sessions.jsonl, "
            "keys.json and files/ (notes, cron jobs and outputs).",
        },
        404: {"description": "Hermes holds nothing of this user."},
    },
)
async def export_user(
    user_id: str = UserId, runtime: Runtime = Depends(get_runtime)
) -> StreamingResponse:
    """A zip of the user's sessions (as `hermes sessions export`), notes, jobs and keys."""
    from hermes.user_archive import write_archive  # the transfer format's models: on first use

    user = _user(user_id)
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115
    try:
        about = await asyncio.to_thread(write_archive, runtime.settings, runtime.store, user, spool)
    except BaseException:
        spool.close()
        raise
    if not (about["sessions"] or about["keys"] or about["files"]):
        spool.close()
        raise APIError(
            404, f"Hermes holds nothing of user {user!r}.", code="user_not_found", param="id"
        )
    spool.seek(0)
    return StreamingResponse(
        _chunks(spool),
        media_type="application/zip",
        headers={
            "Content-Disposition": f'attachment; filename="hermes-user-{_filename(user)}.zip"'
        },
    )


def _filename(user: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in user)[:80]


def _chunks(spool: IO[bytes]) -> Iterator[bytes]:
    """Read in a worker thread by Starlette (a sync iterator), closed at the end."""
    try:
        while chunk := spool.read(CHUNK):
            yield chunk
    finally:
        spool.close()


@router.delete(
    "/{user_id}",
    summary="Forget a user everywhere",
    dependencies=[Depends(require_admin)],
    responses=json_example(
        {
            "forgotten": "alice",
            "api_keys": 1,
            "sessions": 3,
            "messages": 42,
            "notes": 2,
            "jobs": 1,
            "job_outputs": 4,
            "responses": 0,
            "pairing": 0,
            "chats": 0,
            "files": 0,
        }
    ),
)
async def forget(
    request: Request, user_id: str = UserId, runtime: Runtime = Depends(get_runtime)
) -> dict[str, Any]:
    """Remove the user's notes, sessions, messages, search rows, vectors, jobs and outputs,
    stored responses, gateway pairing and scoped keys. Idempotent: again → zero counts."""
    user = _user(user_id)
    try:
        counts = await asyncio.to_thread(forget_user, runtime.settings, runtime.store, user)
    except ProviderError as exc:  # the last step: the rest is forgotten, say what is not
        _forget_in_memory(request, user)
        raise APIError(502, str(exc), type="server_error", code="provider_error") from None
    _forget_in_memory(request, user)
    return {"forgotten": user, **counts}


def _forget_in_memory(request: Request, user: str) -> None:
    """This process's caches of the user: their keys (usable for a few seconds more
    otherwise) and remembered idempotent answers."""
    state = request.app.state
    cache: dict[bytes, tuple[float, ApiKeyRecord | None]] | None = getattr(
        state, "scoped_key_cache", None
    )
    if cache:
        for token in [t for t, (_, r) in cache.items() if r is not None and r.user == user]:
            del cache[token]
    state.idempotency.forget_scope(scope_for_user(user))
