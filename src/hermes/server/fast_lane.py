"""A fast lane for the turn routes: `POST /v1/chat/completions` and `POST /v1/responses`.

A turn is the request a server answers most, and on its way to the handler it crossed
FastAPI's and Starlette's whole stack: the telemetry check, `ServerErrorMiddleware`, the
exception-telemetry and body-limit layers, Hermes' own middlewares, `ExceptionMiddleware`,
an `AsyncExitStack`, the router's scan and the route's wrapper. `HermesApp` sends those two
requests through a stack of their own instead: the same middlewares the app was given (request
id, metrics, hygiene, CORS when configured: the very classes and arguments, built once more),
then the route's own ASGI app (Starlette's `request_response`, which renders the app's
exception handlers) with the scope the router would have given it. What is skipped does
nothing for these routes on a Hermes app: the body limit is Hermes' own (`max_body_size` is
unset), the telemetry layers are off until a global OpenTelemetry provider is set (the lane
is not taken then), no route of it uses the exit stack, and a crash is answered by
`HygieneMiddleware`'s 500 before `ServerErrorMiddleware` would see it.

Everything else, preflights and other methods on these paths included, goes through FastAPI
as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from hermes.server.lazy_routes import get_route_path

LANE_PATHS = ("/v1/chat/completions", "/v1/responses")
LANE_METHOD = "POST"


class HermesApp(FastAPI):
    """FastAPI, with the turn routes dispatched straight to their handlers."""

    fast_lane = True
    """False sends the turn routes through the full stack too (tests compare the two)."""
    _lanes: dict[str, ASGIApp] | None = None
    _telemetry_on: Callable[[], bool] = staticmethod(lambda: True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == LANE_METHOD and self.fast_lane:
            lanes = self._lanes if self._lanes is not None else self._build_lanes()
            lane = lanes.get(get_route_path(scope))
            if lane is not None and not self._telemetry_on():
                scope["app"] = self
                await lane(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    def lane_paths(self) -> list[str]:
        """The paths the lane serves (none before the first request: it is built then)."""
        return list(self._lanes or ())

    def _build_lanes(self) -> dict[str, ASGIApp]:
        """One stack per lane route, built with the app's own (the middlewares are final then)."""
        if self.middleware_stack is None:
            self.middleware_stack = self.build_middleware_stack()
        lanes: dict[str, ASGIApp] = {}
        # FastAPI's own per-request telemetry check, asked before each lane request; a FastAPI
        # without it (another version) gets no lane rather than a guess
        telemetry = getattr(getattr(self, "_native_telemetry", None), "enabled", None)
        limited = getattr(self, "max_body_size", None) is not None
        if callable(telemetry) and not (self.debug or self.root_path or limited):
            self._telemetry_on = telemetry
            handlers = _handlers(self)
            for path in LANE_PATHS:
                route = _dispatched(self, path)
                if route is not None:
                    lanes[path] = self._wrap(_Dispatch(self, route, handlers))
        self._lanes = lanes
        return lanes

    def _wrap(self, app: ASGIApp) -> ASGIApp:
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app


class _Dispatch:
    """What the router and `ExceptionMiddleware` leave in the scope, then the route's app."""

    def __init__(self, app: FastAPI, route: Route, handlers: tuple[Any, Any]) -> None:
        self.router = app.router
        self.route = route
        self.handlers = handlers
        self.endpoint = route.endpoint
        self.handle = route.app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["starlette.exception_handlers"] = self.handlers
        if "router" not in scope:
            scope["router"] = self.router
        scope["route"] = self.route
        scope["endpoint"] = self.endpoint
        scope["path_params"] = {}
        await self.handle(scope, receive, send)


def _dispatched(app: FastAPI, path: str) -> Route | None:
    """The route the router would dispatch a POST to `path` to, when that is sure to be
    the same for every such request: a plain Starlette route, behind routes whose match
    depends on the path and method alone."""
    probe: Scope = {"type": "http", "method": LANE_METHOD, "path": path, "root_path": ""}
    for route in app.router.routes:
        if not isinstance(route, Route):
            return None
        match, child = route.matches(probe)
        if match == Match.FULL:
            plain = type(route) is Route and child.get("path_params") == {}
            return route if plain else None
    return None


def _handlers(app: FastAPI) -> tuple[dict[Any, Any], dict[int, Any]]:
    """The exception and status handlers `ExceptionMiddleware` puts in the scope."""
    keep = {k: v for k, v in app.exception_handlers.items() if k not in (500, Exception)}
    base = ExceptionMiddleware(app.router, handlers=keep, debug=app.debug)
    exceptions: dict[Any, Any] = {HTTPException: base.http_exception}
    statuses: dict[int, Any] = {}
    for key, handler in keep.items():
        if isinstance(key, int):
            statuses[key] = handler
        else:
            exceptions[key] = handler
    return exceptions, statuses
