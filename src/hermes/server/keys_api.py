"""`/api/keys`: scoped API keys over HTTP, as `hermes keys create|list|revoke` (issue 37).

Owner only (the server key; a scoped key gets 403): a key is a credential for another user.
The secret is in the creation answer once and never again (only its SHA-256 is stored);
revoking also drops this process's cached copy so the key stops at once, not in seconds.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse

from hermes.auth.keys import KeyError_, create_key, list_keys, parse_expiry, revoke
from hermes.runtime import Runtime
from hermes.scopes import InvalidIdError
from hermes.server.deps import get_runtime, require_auth
from hermes.server.errors import APIError
from hermes.server.users_api import require_admin
from hermes.store.api_keys import ApiKeyRecord

router = APIRouter(
    prefix="/api/keys",
    tags=["keys"],
    dependencies=[Depends(require_auth), Depends(require_admin)],
)

_KEY_ID = re.compile(r"^[0-9a-f]{1,64}$")
KEY_EXAMPLE = {
    "id": "3f2a9c0b1d4e",
    "user": "alice",
    "label": "alice's phone",
    "created_at": 1767225600.0,
    "expires_at": None,
    "revoked": False,
    "state": "active",
}


class KeyCreate(BaseModel):
    """POST /api/keys body, the options of `hermes keys create`."""

    model_config = ConfigDict(extra="forbid")

    user: str = Field(description="The end user the key acts as.", examples=["alice"])
    expires: str | None = Field(
        default=None, description="Lifetime such as 30d, 12h, 90m, 2w or 1y; none = never."
    )
    label: str | None = Field(default=None, max_length=200, description="A note to know it by.")


def state_of(record: ApiKeyRecord) -> str:
    """active, revoked or expired (the same words `hermes keys list` prints)."""
    if record.revoked_at:
        return "revoked"
    return "active" if record.usable() else "expired"


def _shown(record: ApiKeyRecord) -> dict[str, Any]:
    return {**record.as_dict(), "state": state_of(record)}


def _refusal(exc: Exception, param: str | None) -> APIError:
    text = str(exc)
    text = text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
    return APIError(400, text.replace("--expires", "`expires`"), code="invalid_value", param=param)


@router.get(
    "",
    summary="List scoped keys (never their secrets) and the quota settings",
    responses={
        200: {
            "content": {
                "application/json": {
                    "example": {
                        "keys": [KEY_EXAMPLE],
                        "quotas": {
                            "requests_per_minute": 60,
                            "turns_per_day": None,
                            "apply_to_owner": False,
                        },
                    }
                }
            }
        }
    },
)
async def keys(runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """Every scoped key, oldest first, with its state; `quotas` is the `quotas:` setting
    each key and user is held to (read-only here: change it in config.yaml)."""
    try:
        records = await asyncio.to_thread(list_keys, runtime.store)
    except KeyError_ as exc:
        raise APIError(501, f"{exc}.", code="keys_unsupported") from None
    return {
        "keys": [_shown(r) for r in records],
        "quotas": runtime.settings.quotas.model_dump(),
    }


@router.post(
    "",
    summary="Create a scoped key (its secret is shown once)",
    status_code=201,
    responses={
        201: {
            "content": {
                "application/json": {"example": {"key": KEY_EXAMPLE, "secret": "hk_3f2a9c0b1d4e_…"}}
            }
        },
        400: {"description": "A bad user id, lifetime or label."},
    },
)
async def create(body: KeyCreate, runtime: Runtime = Depends(get_runtime)) -> JSONResponse:
    """A key that acts as `user` (as `X-Hermes-User-Id` would, and can name no other).
    `secret` is the only copy: Hermes keeps its hash."""
    try:
        seconds = parse_expiry(body.expires) if body.expires else None
    except KeyError_ as exc:
        raise _refusal(exc, "expires") from None
    try:
        token, record = await asyncio.to_thread(
            create_key, runtime.store, body.user, expires_in=seconds, label=body.label
        )
    except InvalidIdError as exc:
        raise _refusal(exc, "user") from None
    except KeyError_ as exc:
        raise APIError(501, f"{exc}.", code="keys_unsupported") from None
    return JSONResponse(
        {"key": _shown(record), "secret": token},
        status_code=201,
        headers={"Cache-Control": "no-store"},
    )


@router.delete(
    "/{key_id}",
    summary="Revoke a scoped key",
    responses={
        200: {
            "content": {"application/json": {"example": {"id": "3f2a9c0b1d4e", "revoked": True}}}
        },
        404: {"description": "No active key has this id."},
    },
)
async def revoke_key(
    request: Request,
    key_id: str = PathParam(..., description="The key's id (from GET /api/keys)."),
    runtime: Runtime = Depends(get_runtime),
) -> dict[str, Any]:
    """Requests made with the key get 401 from now on, here at once (other replicas
    within seconds); its dashboard sign-ins end too."""
    if not _KEY_ID.match(key_id):
        raise APIError(
            400,
            f"{key_id!r} is not a key id (hex, e.g. 3f2a9c0b1d4e).",
            "invalid_request_error",
            "invalid_key_id",
            "id",
        )
    try:
        done = await asyncio.to_thread(revoke, runtime.store, key_id)
    except KeyError_ as exc:
        raise APIError(501, f"{exc}.", code="keys_unsupported") from None
    if not done:
        raise APIError(
            404,
            f"No active key has the id {key_id!r}; GET /api/keys lists them.",
            code="key_not_found",
            param="id",
        )
    _drop_cached(request, key_id)
    return {"id": key_id, "revoked": True}


def _drop_cached(request: Request, key_id: str) -> None:
    """This process's caches of the key (the bearer cache and the dashboard's)."""
    state = request.app.state
    for name in ("scoped_key_cache", "ui_key_cache"):
        cache: dict[Any, tuple[float, ApiKeyRecord | None]] | None = getattr(state, name, None)
        if cache:
            for token in [t for t, (_, r) in cache.items() if r is not None and r.id == key_id]:
                del cache[token]
