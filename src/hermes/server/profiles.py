"""One `hermes serve` for every profile: `/p/<name>/…` is profile <name>'s own app (SPEC §16).

Each profile gets the app `hermes -p <name> serve` would run — its own settings, runtime,
store, key, cron ticker and bots — mounted under `/p/<name>`; everything else goes to the
default profile's app, so `/v1` stays where it is. `/p/default/…` is the default profile too.

Profiles that exist when the server starts are opened with it (their cron jobs tick from the
start); one created while it runs is opened on its first request; one deleted while it runs
is closed on its next request and answers 404 like any unknown profile. A request is
authenticated by the profile's own app with the profile's own `server.api_key`: no key opens
a profile other than its own, the default profile's included.

`GET /api/profiles` (a route of the default profile's app, `api_router`) lists the profiles
the caller's bearer opens, for the dashboard's profile switcher.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from starlette.types import Receive, Scope, Send

from hermes.config.home import (
    DEFAULT_PROFILE,
    PROFILE_NAME,
    list_profiles,
    profile_exists,
)
from hermes.config.settings import ConfigError, Settings
from hermes.errors import HermesError
from hermes.observability import logs
from hermes.plugins import Daemon
from hermes.profiles import profile_settings
from hermes.server.errors import APIError, error_body

log = logging.getLogger("hermes.server")

PREFIX = "/p/"
LIST_PATH = "/api/profiles"

ASGIApp = Callable[..., Any]
AppFactory = Callable[[Settings], Any]
"""Builds a profile's app (a FastAPI app whose lifespan opens and closes its runtime)."""
Guard = Callable[[Settings], None]
"""Raises HermesError when a profile may not be served (e.g. no key on a public bind)."""


class ProfileUnavailableError(HermesError):
    """A profile exists but cannot be served (bad config, store down, no key on a public bind)."""


@dataclass
class _Mounted:
    app: Any
    settings: Settings
    stack: AsyncExitStack = field(default_factory=AsyncExitStack)


async def _send_json(send: Callable[..., Any], status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _bearer(scope: Scope) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            kind, _, token = value.partition(b" ")
            return token.strip() if kind.lower() == b"bearer" else None
    return None


def _opens(settings: Settings, token: bytes | None) -> bool:
    """Whether `token` is this profile's server key (any bearer where none is set, §6)."""
    secret = settings.server.api_key
    if secret is None:
        return True
    return token is not None and hmac.compare_digest(token, secret.get_secret_value().encode())


class ProfileRouter:
    """The outermost ASGI app: `/p/<name>/…` to that profile's app, the rest to `default_app`."""

    def __init__(
        self,
        root: Path,
        default_app: Any,
        default_settings: Settings,
        build: AppFactory,
        *,
        guard: Guard = lambda settings: None,
    ) -> None:
        self.root = root
        self.default_app = default_app
        self.default_settings = default_settings
        self._build = build
        self._guard = guard
        self._mounted: dict[str, _Mounted] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False

    def served(self) -> list[str]:
        """The named profiles open now."""
        return list(self._mounted)

    # ---------------------------------------------------------------- lifecycle

    def daemon(self) -> Daemon:
        """Opens the existing profiles with the default app and closes them before it."""
        return Daemon("profiles", self.open_existing, self.close)

    async def open_existing(self) -> None:
        for name in list_profiles(self.root):
            if name != DEFAULT_PROFILE:
                try:
                    await self._open(name)
                except ProfileUnavailableError as exc:
                    log.error("profile %s is not served: %s", name, exc)

    async def close(self) -> None:
        self._closed = True
        for name in reversed(list(self._mounted)):
            await self._close(name)

    async def _open(self, name: str) -> _Mounted:
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            mounted = self._mounted.get(name)
            if mounted is not None:
                return mounted
            if self._closed:
                raise ProfileUnavailableError("the server is shutting down")
            try:
                settings = profile_settings(self.root, name)
                self._guard(settings)
                app = self._build(settings)
            except (ConfigError, HermesError) as exc:
                raise ProfileUnavailableError(str(exc)) from None
            mounted = _Mounted(app, settings)
            try:
                await mounted.stack.enter_async_context(app.router.lifespan_context(app))
            except Exception as exc:
                log.exception("opening profile %s failed", name)
                raise ProfileUnavailableError(f"it could not be opened: {exc}") from None
            self._mounted[name] = mounted
            self._mask_secrets()
            log.info("serving profile %s at %s%s/", name, PREFIX, name)
            return mounted

    def _mask_secrets(self) -> None:
        """One process, one log: it masks the secrets of every profile open (its key, its
        model key), in the default profile's log format."""
        others = [mounted.settings for mounted in self._mounted.values()]
        logs.configure(self.default_settings, also=others)

    async def _close(self, name: str) -> None:
        mounted = self._mounted.pop(name, None)
        if mounted is not None:
            try:
                await mounted.stack.aclose()
            except Exception:
                log.exception("closing profile %s failed", name)

    # ---------------------------------------------------------------- requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        path: str = scope.get("path", "")
        if kind not in ("http", "websocket") or not path.startswith(PREFIX):
            await self.default_app(scope, receive, send)
            return
        name, _, rest = path[len(PREFIX) :].partition("/")
        inner = "/" + rest
        child = dict(scope)
        child["path"] = inner
        child["raw_path"] = inner.encode()
        child["root_path"] = scope.get("root_path", "") + PREFIX + name
        if name == DEFAULT_PROFILE:
            await self.default_app(child, receive, send)
            return
        if not (PROFILE_NAME.match(name) and profile_exists(self.root, name)):
            if name in self._mounted:  # deleted while serving: its daemons stop too
                await self._close(name)
            await self._refuse(scope, send, 404, self._not_found(name), "profile_not_found")
            return
        try:
            mounted = await self._open(name)
        except ProfileUnavailableError as exc:
            message = f"The profile {name!r} cannot be served: {exc}"
            await self._refuse(scope, send, 503, message, "profile_unavailable")
            return
        await mounted.app(child, receive, send)

    @staticmethod
    def _not_found(name: str) -> str:
        shown = name if len(name) <= 64 else name[:64] + "..."
        return (
            f"There is no profile {shown!r} on this server; `hermes profile list` shows the "
            "profiles and `hermes profile create NAME` makes one."
        )

    @staticmethod
    async def _refuse(scope: Scope, send: Any, status: int, message: str, code: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4404 if status == 404 else 1013})
            return
        kind = "not_found_error" if status == 404 else "server_error"
        await _send_json(send, status, error_body(message, kind, code))

    def opened_by(self, token: bytes | None) -> list[str]:
        """The profiles whose server key `token` is (constant-time), default first."""
        names = []
        for name in list_profiles(self.root):
            if name == DEFAULT_PROFILE:
                settings = self.default_settings
            else:
                mounted = self._mounted.get(name)
                try:
                    settings = mounted.settings if mounted else profile_settings(self.root, name)
                except ConfigError:
                    continue
            if _opens(settings, token):
                names.append(name)
        return names

    def api_router(self) -> APIRouter:
        """`GET /api/profiles` for the default profile's app (and its OpenAPI document)."""
        router = APIRouter(tags=["profiles"])

        @router.get(
            LIST_PATH,
            summary="Profiles this key opens",
            responses={
                200: {"content": {"application/json": {"example": LIST_EXAMPLE}}},
                401: {"description": "The bearer is the server key of no profile."},
            },
        )
        async def list_profiles_route(request: Request) -> dict[str, Any]:
            """The profiles of this server whose own server key the bearer is (any bearer
            for a profile without a key), each with the prefix its API is served under:
            the dashboard's profile switcher asks this once, at sign-in."""
            names = self.opened_by(_bearer(request.scope))
            if not names:
                raise APIError(
                    401,
                    "Invalid API key: it is the server key of no profile on this server.",
                    "authentication_error",
                    "invalid_api_key",
                )
            return {"profiles": [{"name": n, "base": base_of(n)} for n in names]}

        return router


def base_of(name: str) -> str:
    """Where a profile's API is served: `` for the default profile, `/p/<name>` otherwise."""
    return "" if name == DEFAULT_PROFILE else f"{PREFIX}{name}"


LIST_EXAMPLE = {
    "profiles": [{"name": "default", "base": ""}, {"name": "coder", "base": "/p/coder"}]
}
