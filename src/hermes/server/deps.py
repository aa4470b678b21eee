"""FastAPI dependencies every route shares: the runtime, bearer auth, and the caller's scope.

They are `async def` on purpose: FastAPI runs plain `def` dependencies in a thread pool, a
thread hop per dependency per request, for functions that only read headers.

    from fastapi import APIRouter, Depends
    from hermes.server.deps import get_runtime, get_scope, require_auth

    router = APIRouter(dependencies=[Depends(require_auth)])

    @router.get("/api/things")
    async def things(runtime: Runtime = Depends(get_runtime), scope: str = Depends(get_scope)):
        ...
"""

from __future__ import annotations

import hmac

from fastapi import Request

from hermes.runtime import Runtime
from hermes.scopes import InvalidIdError, scope_for_user
from hermes.server.errors import APIError

USER_HEADER = "x-hermes-user-id"


async def get_runtime(request: Request) -> Runtime:
    """The one Runtime the app was created with (`app.state.runtime`)."""
    runtime: Runtime = request.app.state.runtime
    return runtime


def server_key(runtime: Runtime) -> str | None:
    """The configured server key, or None when the server runs open (loopback only)."""
    secret = runtime.settings.server.api_key
    value = secret.get_secret_value() if secret is not None else ""
    return value or None


def _key_bytes(request: Request) -> bytes | None:
    state = request.app.state
    if not hasattr(state, "server_key_bytes"):
        key = server_key(state.runtime)
        state.server_key_bytes = key.encode("utf-8") if key else None
    cached: bytes | None = state.server_key_bytes
    return cached


async def require_auth(request: Request) -> None:
    """`Authorization: Bearer <key>` compared in constant time; open when no key is configured."""
    expected = _key_bytes(request)
    if expected is None:
        return
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not header:
        raise APIError(
            401,
            "Missing API key: send `Authorization: Bearer <key>` with the "
            "server key (server.api_key / HERMES_API_KEY).",
            "authentication_error",
            "invalid_api_key",
        )
    # Header values arrive latin-1 decoded: encode back to the exact bytes that were sent.
    given = token.strip().encode("latin-1") if scheme.lower() == "bearer" else b""
    if not hmac.compare_digest(given, expected):
        raise APIError(
            401,
            "Invalid API key: the bearer token does not match the server key.",
            "authentication_error",
            "invalid_api_key",
        )


async def get_scope(request: Request) -> str:
    """The caller's scope: `X-Hermes-User-Id` → "user:<id>" (needs a server key), else "default"."""
    user = request.headers.get(USER_HEADER)
    if user is None:
        return "default"
    if _key_bytes(request) is None:
        raise APIError(
            403,
            "X-Hermes-User-Id needs a server key: without one any caller could "
            "claim any user. Set server.api_key (HERMES_API_KEY) to use per-user "
            "scopes.",
            code="user_scope_requires_key",
            param="X-Hermes-User-Id",
        )
    try:
        return scope_for_user(user)
    except InvalidIdError as exc:
        raise APIError(
            400, f"X-Hermes-User-Id: {exc}.", code="invalid_user_id", param="X-Hermes-User-Id"
        ) from None
