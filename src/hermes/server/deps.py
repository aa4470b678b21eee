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

import asyncio
import hmac
import time
from collections.abc import Callable
from typing import Any

from fastapi import Request

from hermes.auth.keys import PREFIX, verify
from hermes.runtime import Runtime
from hermes.scopes import (
    InvalidIdError,
    ScopeConflictError,
    resolve_scope,
    scope_for_user,
    validate_id,
)
from hermes.server import ui_auth
from hermes.server.errors import APIError
from hermes.server.quotas import Quotas
from hermes.store.api_keys import ApiKeyRecord
from hermes.store.records import records_of

USER_HEADER = "x-hermes-user-id"
KEY_CACHE_SECONDS = 5.0
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


TURN_PATHS = frozenset({"/v1/chat/completions", "/v1/responses", "/v1/runs"})


def _bearer(request: Request) -> bytes | None:
    """The bearer token exactly as sent (header values arrive latin-1 decoded), or None."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip().encode("latin-1") if scheme.lower() == "bearer" else b""


def sent_server_key(request: Request) -> bool:
    """Whether the caller holds the server key, or none is configured (the server is open):
    for answers that add owner detail to an anonymous route, never raising."""
    expected = _key_bytes(request)
    if expected is None:
        return True
    given = _bearer(request)
    return given is not None and hmac.compare_digest(given, expected)


async def require_auth(request: Request) -> None:
    """`Authorization: Bearer <key>`: the server key (constant-time compare), or a scoped key
    (`hermes keys create`) that acts as its one user. Open when no server key is configured,
    except that a scoped-looking key must be valid. Then the caller's quotas are counted."""
    expected = _key_bytes(request)
    given = _bearer(request)
    request.state.api_key = None
    if given is None and await ui_auth.cookie_auth(request):
        pass  # the dashboard's sign-in cookie (with its CSRF token), see ui_auth
    elif given and given.startswith(PREFIX.encode()):
        record = await _scoped_key(request, given)
        if record is None:
            raise APIError(
                401,
                "Invalid API key: this scoped key is unknown, revoked or expired.",
                "authentication_error",
                "invalid_api_key",
            )
        request.state.api_key = record
    elif expected is not None:
        if given is None:
            raise APIError(
                401,
                "Missing API key: send `Authorization: Bearer <key>` with the "
                "server key (server.api_key / HERMES_API_KEY).",
                "authentication_error",
                "invalid_api_key",
            )
        if not hmac.compare_digest(given, expected):
            raise APIError(
                401,
                "Invalid API key: the bearer token does not match the server key.",
                "authentication_error",
                "invalid_api_key",
            )
    await _count_quotas(request)


async def _scoped_key(request: Request, token: bytes) -> ApiKeyRecord | None:
    """The key record, cached for a few seconds so a revoke takes effect quickly without a
    store read on every request."""
    cache: dict[bytes, tuple[float, ApiKeyRecord | None]] = _app_state(
        request, "scoped_key_cache", dict
    )
    now = time.monotonic()
    hit = cache.get(token)
    if hit is not None and now - hit[0] < KEY_CACHE_SECONDS:
        return hit[1] if hit[1] is None or hit[1].usable() else None
    runtime: Runtime = request.app.state.runtime
    try:
        text = token.decode("ascii")
    except UnicodeDecodeError:
        return None
    record = await asyncio.to_thread(verify, runtime.store, text)
    if len(cache) > 10_000:
        cache.clear()
    cache[token] = (now, record)
    return record


def _app_state(request: Request, name: str, make: Callable[[], Any]) -> Any:
    """A per-app object kept on `app.state`, made on first use."""
    state = request.app.state
    value = getattr(state, name, None)
    if value is None:
        value = make()
        setattr(state, name, value)
    return value


async def _count_quotas(request: Request) -> None:
    settings = request.app.state.runtime.settings.quotas
    if not (settings.requests_per_minute or settings.turns_per_day):
        return
    runtime = request.app.state.runtime
    quotas: Quotas = _app_state(
        request, "quotas", lambda: Quotas(settings, records_of(runtime.store))
    )
    record: ApiKeyRecord | None = request.state.api_key
    subjects: list[str] = []
    if record is not None:
        subjects = [f"key:{record.id}", scope_for_user(record.user)]
    elif request.headers.get(USER_HEADER) is not None:
        subjects = [_user_scope(request)]
    elif settings.apply_to_owner:
        subjects = ["owner"]
    if subjects:
        await asyncio.to_thread(quotas.check, subjects, turn=request.url.path in TURN_PATHS)


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
    refuse_non_ascii(value, header, "invalid_session_id")
    try:
        return validate_id(value, what="session id")
    except InvalidIdError as exc:
        raise APIError(400, f"{header}: {exc}.", code="invalid_session_id", param=header) from None


def session_id_or_400(value: str, param: str = "session_id") -> str:
    """A session id named in a path or body, checked (400 `invalid_session_id` naming
    `param` when it is not one)."""
    try:
        return validate_id(value, what="session id")
    except InvalidIdError as exc:
        raise APIError(400, f"{exc}.", code="invalid_session_id", param=param) from None


def refuse_non_ascii(value: str, header: str, code: str) -> None:
    """Header values arrive as latin-1-decoded bytes: `café` sent as UTF-8 reads `cafÃ©`.
    Such an id is refused by the header's name, never echoed back (it would be mojibake)."""
    if not value.isascii():
        raise APIError(
            400,
            f"{header} holds characters outside ASCII; ids are 1-256 characters of "
            "A-Z a-z 0-9 . _ : / @ - (map other names onto those, e.g. percent-encode them).",
            code=code,
            param=header,
        )


def _user_scope(request: Request) -> str:
    """`X-Hermes-User-Id` → "user:<id>" (needs a server key), else "default"; a scoped key
    acts as its own user and may not name another."""
    user = request.headers.get(USER_HEADER)
    record: ApiKeyRecord | None = getattr(request.state, "api_key", None)
    if record is not None:
        own = scope_for_user(record.user)
        if user is not None and _scope_or_400(user) != own:
            raise APIError(
                403,
                "This API key acts as one user and cannot set another X-Hermes-User-Id; "
                "leave the header out (or send the key's own user).",
                "permission_error",
                "user_scope_mismatch",
                "X-Hermes-User-Id",
            )
        return own
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
    return _scope_or_400(user)


def _scope_or_400(user: str) -> str:
    refuse_non_ascii(user, "X-Hermes-User-Id", "invalid_user_id")
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
