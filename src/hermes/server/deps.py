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
from hermes.scopes import (
    InvalidIdError,
    ScopeConflictError,
    resolve_scope,
    scope_for_user,
    validate_id,
)
from hermes.server.errors import APIError

USER_HEADER = "x-hermes-user-id"
SESSION_HEADER = "X-Hermes-Session-Id"
SESSION_KEY_HEADER = "X-Hermes-Session-Key"


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


def session_from_headers(request: Request) -> str | None:
    """The client's session id (X-Hermes-Session-Id, or its synonym X-Hermes-Session-Key)."""
    sid = request.headers.get(SESSION_HEADER)
    key = request.headers.get(SESSION_KEY_HEADER)
    if sid is not None and key is not None and sid != key:
        raise APIError(
            400,
            f"{SESSION_HEADER} and {SESSION_KEY_HEADER} are synonyms but differ; send one of them.",
            code="conflicting_session_headers",
            param=SESSION_HEADER,
        )
    value = sid if sid is not None else key
    if value is None:
        return None
    header = SESSION_HEADER if sid is not None else SESSION_KEY_HEADER
    try:
        return validate_id(value, what="session id")
    except InvalidIdError as exc:
        raise APIError(400, f"{header}: {exc}.", code="invalid_session_id", param=header) from None


def _user_scope(request: Request) -> str:
    """`X-Hermes-User-Id` → "user:<id>" (needs a server key), else "default"."""
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


def scope_with_session(request: Request, scope: str, session_id: str | None) -> str:
    """`scope` combined with what a namespaced session id claims (`server.session_scopes`);
    a conflict (X-Hermes-User-Id names another user) is a 400."""
    namespaces = request.app.state.runtime.settings.server.session_scopes
    try:
        return resolve_scope(scope, session_id, namespaces)
    except ScopeConflictError as exc:
        raise APIError(400, f"{exc}.", code="conflicting_scope", param="X-Hermes-User-Id") from None
    except InvalidIdError as exc:
        raise APIError(400, f"{exc}.", code="invalid_session_id", param="session_id") from None


async def get_scope(request: Request) -> str:
    """The caller's scope: `X-Hermes-User-Id` → "user:<id>" (needs a server key); else, with
    `server.session_scopes`, the scope a namespaced session id claims; else "default"."""
    scope = _user_scope(request)
    if not request.app.state.runtime.settings.server.session_scopes:
        return scope
    return scope_with_session(request, scope, session_from_headers(request))
