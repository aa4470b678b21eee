"""`/ui` routes: the page, its static files, and signing in and out with a key.

The key arrives only in a POST body (never a URL, never logged) and is checked as the API
checks a bearer (constant-time); the browser then holds an opaque signed cookie instead.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response

from hermes import __version__
from hermes.server import ui_auth
from hermes.server.errors import APIError
from hermes.server.ui.assets import REVALIDATE, STATIC, page, tag, untagged

router = APIRouter(prefix="/ui", include_in_schema=False)

TYPES = {".html", ".css", ".js", ".svg", ".png", ".ico", ".json", ".woff2"}
FAILED_SIGN_IN_DELAY = 0.25
MAX_KEY_CHARS = 4096


def _error(status: int, message: str, code: str) -> JSONResponse:
    body = {
        "error": {"message": message, "type": "authentication_error", "code": code, "param": None}
    }
    return JSONResponse(body, status_code=status)


def _home(request: Request) -> str:
    """`/ui/` where this dashboard is served (`/p/<name>/ui/` for a named profile)."""
    return request.scope.get("root_path", "") + "/ui/"


@router.get("")
async def root(request: Request) -> RedirectResponse:
    return RedirectResponse(_home(request), status_code=307)


def _file(request: Request, target: Path, cache_control: str = REVALIDATE) -> Response:
    """The file, or 304 when the browser's copy is current. Untagged files are revalidated
    at every load (no-cache, so an upgrade is seen at once); tagged ones are kept."""
    stat = target.stat()
    etag = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'
    headers = {"Cache-Control": cache_control, "ETag": etag}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return FileResponse(target, headers=headers)


@router.get("/")
async def index(request: Request) -> Response:
    """The page, naming this build's tagged files (`ui.assets`); revalidated at every load."""
    body = page()
    etag = f'"{tag()}"'
    headers = {"Cache-Control": REVALIDATE, "ETag": etag}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="text/html; charset=utf-8", headers=headers)


@router.get("/static/{path:path}")
async def static(request: Request, path: str) -> Response:
    """A file under static/, tagged or not (known types only; no path may leave the
    folder)."""
    path, cache_control = untagged(path)
    target = (STATIC / path).resolve()
    if (
        not target.is_relative_to(STATIC.resolve())
        or target.suffix not in TYPES
        or not target.is_file()
    ):
        return _error(404, f"No dashboard file {path!r}.", "not_found")
    return _file(request, target, cache_control)


def _same_origin(request: Request) -> bool:
    """A sign-in posted from another site's page is refused (login CSRF)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return urlsplit(origin).netloc == host


async def _key_from(request: Request) -> tuple[str | None, bool]:
    """The key from a JSON or form body, and whether the caller wants JSON back."""
    raw = await request.body()
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        if kind == "application/json":
            data: Any = json.loads(raw or b"{}")
            key = data.get("key") if isinstance(data, dict) else None
            return (key if isinstance(key, str) else None), True
        values = parse_qs(raw.decode("utf-8"), keep_blank_values=True).get("key", [])
        return (values[0] if values else None), False
    except (ValueError, UnicodeDecodeError):
        return None, kind == "application/json"


def _session_body(request: Request, sign_in: ui_auth.SignIn, user: str | None) -> dict[str, Any]:
    secret = request.app.state.runtime.settings.server.api_key
    return {
        "scope": "user" if sign_in.kind == "scoped" else "owner",
        "user": user,
        "open": secret is None or not secret.get_secret_value(),
        "csrf": ui_auth.csrf_token(request, sign_in),
        "version": __version__,
    }


async def _user_of(request: Request, sign_in: ui_auth.SignIn) -> str | None:
    if sign_in.kind != "scoped":
        return None
    record = await ui_auth.scoped_record(request, sign_in.key_hash or "")
    if record is None:
        raise APIError(401, "The scoped key is revoked or expired.", "authentication_error")
    return record.user


@router.post("/login")
async def login(request: Request) -> Response:
    """Sign in with the server key or a scoped key (form or JSON `{"key"}`)."""
    if not _same_origin(request):
        return _error(403, "Sign in from the dashboard's own page.", "cross_origin_sign_in")
    key, wants_json = await _key_from(request)
    if key is None or len(key) > MAX_KEY_CHARS:
        return _error(400, "Send the key as `key` (a form field or JSON).", "missing_key")
    sign_in = await ui_auth.check_key(request, key.strip())
    if sign_in is None:
        await asyncio.sleep(FAILED_SIGN_IN_DELAY)
        return _error(
            401, "That key is not this server's key or a valid scoped key.", "invalid_api_key"
        )
    user = await _user_of(request, sign_in)
    response: Response = (
        JSONResponse(_session_body(request, sign_in, user))
        if wants_json
        else RedirectResponse(_home(request), status_code=303)
    )
    ui_auth.set_cookie(request, response, sign_in)
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    """End this sign-in on every replica (a store record) and clear the cookie."""
    sign_in = await ui_auth.current(request)
    if sign_in is not None:
        if request.headers.get(ui_auth.CSRF_HEADER) != ui_auth.csrf_token(request, sign_in):
            return _error(403, "Signing out needs the X-CSRF-Token header.", "csrf_token_invalid")
        await ui_auth.sign_out(request, sign_in)
    response = JSONResponse({"signed_out": True})
    ui_auth.clear_cookie(request, response)
    return response


@router.get("/session")
async def session(request: Request) -> Response:
    """Who is signed in and the CSRF token for this sign-in; 401 when nobody is."""
    sign_in = await ui_auth.current(request)
    if sign_in is None:
        return _error(401, "Not signed in.", "not_signed_in")
    try:
        user = await _user_of(request, sign_in)
    except APIError:
        return _error(
            401, "The scoped key you signed in with is revoked or expired.", "invalid_api_key"
        )
    response = JSONResponse(
        _session_body(request, sign_in, user), headers={"Cache-Control": "no-store"}
    )
    fresh = ui_auth.refreshed(sign_in)
    if fresh is not None:
        ui_auth.set_cookie(request, response, fresh)
    return response


@router.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
async def not_found(rest: str) -> Response:
    return _error(404, f"No dashboard page /ui/{rest}.", "not_found")
