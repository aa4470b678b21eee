"""The dashboard at `/ui` (SPEC §14): static files shipped in the package, sign-in by key.

No build step and no external fetch: `static/` holds plain HTML, CSS and native ES modules,
served as they are. Every `/ui` response carries a strict Content-Security-Policy (only this
origin's own scripts and styles, nothing inline, never framed), so data rendered by the
screens can never become script even if a screen slipped.

    from hermes.server import ui
    ui.install(app)   # the routes, /api/me, and the security headers on /ui
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hermes.server.lazy_routes import add_lazy_routes

STATIC = Path(__file__).parent / "static"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer come from
# HygieneMiddleware, on every response.
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


class UIHeaders:
    """Adds the security headers to every response under /ui, errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not (path == "/ui" or path.startswith("/ui/")):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message["headers"] = kept + SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)


def install(app: FastAPI) -> None:
    """Mount the dashboard's routes and the self-service `/api/me` on `app` (built at their
    first request: a server used only as an API never imports them)."""
    add_lazy_routes(app, ("/ui",), _dashboard)
    add_lazy_routes(app, ("/api/me",), _me)
    app.add_middleware(UIHeaders)


def _dashboard() -> APIRouter:
    # set before the first file is served (reading the system's MIME table: not at start)
    mimetypes.add_type("text/javascript", ".js")
    from hermes.server.ui.routes import router

    return router


def _me() -> APIRouter:
    from hermes.server.ui.me_api import router

    return router
