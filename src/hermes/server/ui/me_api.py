"""`/api/me`: who the caller is, and forgetting oneself (issue 37's "forget me").

`DELETE /api/me` is for an end user: a scoped key (or its dashboard sign-in) forgets its own
user everywhere, exactly as the admin's `DELETE /api/users/{id}` would; the key itself goes
too, so it is the last thing that key does. The owner has no "me" to forget (403).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Request

from hermes.runtime import Runtime
from hermes.server.deps import get_runtime, get_scope, require_auth
from hermes.server.errors import APIError
from hermes.server.users_api import _forget_in_memory
from hermes.store.api_keys import ApiKeyRecord
from hermes.users import forget_user

router = APIRouter(prefix="/api/me", tags=["users"], dependencies=[Depends(require_auth)])


@router.get("", summary="Who the caller is")
async def me(request: Request, scope: str = Depends(get_scope)) -> dict[str, Any]:
    """`{"scope", "user", "admin"}`: a scoped key is its user; the server key is the admin."""
    record: ApiKeyRecord | None = getattr(request.state, "api_key", None)
    return {
        "scope": scope,
        "user": record.user if record is not None else None,
        "admin": record is None,
    }


@router.delete("", summary="Forget me (a scoped key's own user)")
async def forget_me(request: Request, runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """Everything of the caller's user, as `DELETE /api/users/{id}`; then the key is gone."""
    record: ApiKeyRecord | None = getattr(request.state, "api_key", None)
    if record is None:
        raise APIError(
            403,
            "Only an end user's scoped key can forget itself; the owner forgets users with "
            "DELETE /api/users/{id}.",
            "permission_error",
            "owner_cannot_forget_self",
        )
    counts = await asyncio.to_thread(forget_user, runtime.settings, runtime.store, record.user)
    _forget_in_memory(request, record.user)
    cache = getattr(request.app.state, "ui_key_cache", None)
    if cache:
        cache.clear()
    return {"forgotten": record.user, **counts}
