"""A part's routes built on the first request under its paths, in the place they would hold.

Importing a route module builds every route's handler and parameter models (FastAPI's
`APIRoute`: a pydantic adapter per parameter and response) and imports whatever the module
needs: most of what `hermes serve` did before its first /health went into routes that a
given server may never be asked for (cron jobs, keys, logs, the dashboard…). `LazyRoutes`
stands in the app's route list for one such router: it names the path prefixes the router's
routes live under and, when a request's path is under one, imports the module, puts the
routes in its own place in the list (so they are matched in the order they always were) and
answers the match as they do. Anything that lists the routes (the OpenAPI document) calls
`build_all` first, so the document is the one the eager app served.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send


def get_route_path(scope: Scope) -> str:
    """The path the routes match against: `path` without the app's `root_path` (a profile's
    app is served under /p/<name>), as Starlette's own routes read it."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path


class LazyRoutes(BaseRoute):
    """Stands for `build()`'s routes in `routes` until a path under `prefixes` is asked for."""

    def __init__(
        self, routes: list[BaseRoute], prefixes: Sequence[str], build: Callable[[], APIRouter]
    ) -> None:
        self._routes = routes
        self.prefixes = tuple(p.rstrip("/") for p in prefixes)
        self._build = build
        self._built: list[BaseRoute] | None = None

    def covers(self, path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in self.prefixes)

    def build(self) -> list[BaseRoute]:
        """Import the router and put its routes where this stand-in is (once)."""
        if self._built is None:
            self._built = list(self._build().routes)
            for i, route in enumerate(self._routes):
                if route is self:
                    self._routes[i : i + 1] = self._built
                    break
        return self._built

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] not in ("http", "websocket") or not self.covers(get_route_path(scope)):
            return Match.NONE, {}
        partial: tuple[Match, Scope] | None = None
        for route in self.build():
            match, child = route.matches(scope)
            if match is Match.FULL:
                return match, {**child, "route": route}
            if match is Match.PARTIAL and partial is None:
                partial = (match, {**child, "route": route})
        return partial or (Match.NONE, {})

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = scope["route"]  # the built route `matches` answered with
        await route.handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        for route in self.build():
            try:
                return route.url_path_for(name, **path_params)
            except NoMatchFound:
                continue
        raise NoMatchFound(name, path_params)


def add_lazy_routes(app: FastAPI, prefixes: Sequence[str], build: Callable[[], APIRouter]) -> None:
    """Add `build()`'s routes to `app` at this place, built at the first request under
    `prefixes` (every route of the router must lie under one of them)."""
    routes = app.router.routes
    routes.append(LazyRoutes(routes, prefixes, build))


def build_all(app: FastAPI) -> None:
    """Build every part's routes that are still waiting for their first request."""
    for route in list(app.router.routes):
        if isinstance(route, LazyRoutes):
            route.build()


def complete_openapi(app: FastAPI) -> None:
    """Make `app.openapi()` (the document at /openapi.json) list the routes not built yet."""
    document = app.openapi

    def openapi() -> dict[str, Any]:
        build_all(app)
        return document()

    app.openapi = openapi  # type: ignore[method-assign]
