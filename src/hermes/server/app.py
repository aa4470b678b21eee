"""The ASGI app: routes + pure-ASGI middleware + a lifespan that opens daemons and closes them in reverse.

The server's own routes (`/health`, `/v1/…`, `/api/jobs`) are included here; other parts add
routers and background daemons through the Registry (`hermes.plugins`): `hermes.router(...)`
and `hermes.daemon(...)`. Daemons start in registration order after the runtime is open and
stop in reverse, before the runtime closes; a daemon whose `start` fails stops the server
from starting (with the daemons already started stopped again). Tests and embedders can pass
extra `daemons=` / `routers=` to `create_app` as well.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import APIRouter, FastAPI
from starlette.middleware.cors import CORSMiddleware

from hermes.observability import logs
from hermes.plugins import Daemon
from hermes.runtime import Runtime
from hermes.server import chat, meta, metrics, responses, ui
from hermes.server.errors import install_error_handlers
from hermes.server.fast_lane import HermesApp
from hermes.server.idempotency import IdempotencyCache
from hermes.server.lazy_routes import add_lazy_routes, complete_openapi
from hermes.server.middleware import HygieneMiddleware, RequestIdMiddleware
from hermes.server.routing import add_routes
from hermes.server.runs_manager import RunManager

log = logging.getLogger("hermes.server")

CORS_ALLOW_HEADERS = [
    "Authorization",
    "Content-Type",
    "Idempotency-Key",
    "X-Hermes-Session-Id",
    "X-Hermes-Session-Key",
    "X-Hermes-User-Id",
    "X-Request-Id",
]
CORS_EXPOSE_HEADERS = ["X-Hermes-Session-Id", "Idempotency-Replayed", "X-Request-Id"]


async def _warm_up_model(runtime: Runtime) -> None:
    """Load the model client's SDK after /health is up rather than before (cold start)."""
    try:
        await runtime.model.warm_up()
    except Exception:  # the first turn will build it again and report any real problem
        log.exception("warming up the model client failed")


def create_app(
    runtime: Runtime,
    *,
    daemons: Sequence[Daemon] = (),
    routers: Sequence[APIRouter] = (),
    close_runtime: bool = True,
    configure_logs: bool = True,
) -> FastAPI:
    """Build the HTTP app around one Runtime; the lifespan closes it unless `close_runtime=False`.
    `configure_logs=False` leaves the process's logging alone (a profile's app: the server's
    own app configures it, with every profile's secrets masked)."""
    all_daemons = [*runtime.daemons(), *daemons]

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if configure_logs:
            logs.configure(runtime.settings)  # logging.format (SPEC §17)
        async with AsyncExitStack() as stack:
            if close_runtime:
                stack.push_async_callback(runtime.aclose)
            stack.push_async_callback(app.state.turns.drain)
            stack.push_async_callback(app.state.runs.close)
            for daemon in all_daemons:
                await daemon.start()
                log.info("started %s", daemon.name)
                if daemon.stop is not None:
                    stack.push_async_callback(_stopper(daemon))
            warm_up = asyncio.create_task(_warm_up_model(runtime))
            stack.callback(warm_up.cancel)
            yield

    app = HermesApp(  # FastAPI, with a fast lane for the turn routes
        title="Hermes",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # the document every route is in (SPEC §13); it names routes, never data, so it is
        # served without the key, as FastAPI does (under /p/<name>/ for a profile)
        openapi_url="/openapi.json",
    )
    app.state.runtime = runtime
    app.state.started_at = int(time.time())
    app.state.turns = TurnTracker()
    app.state.runs = RunManager(runtime)
    app.state.idempotency = IdempotencyCache(shared=runtime.store.idempotency)
    install_error_handlers(app)
    # what clients ask first, the turn routes before the rest: a request is matched against
    # the routes in order, and every turn would otherwise try the meta routes' patterns first
    for router in [chat.router, responses.router, meta.router]:
        add_routes(app, router)
    for prefixes, build in LAZY_ROUTERS:  # the rest on their first request, in this order
        add_lazy_routes(app, prefixes, build)
    for router in [*(make() for make in runtime.registry.routers), *routers]:
        add_routes(app, router)
    ui.install(app)  # the dashboard at /ui (SPEC §14)
    complete_openapi(app)  # /openapi.json lists the routes not built yet too
    settings = runtime.settings.server
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=CORS_ALLOW_HEADERS,
            expose_headers=CORS_EXPOSE_HEADERS,
            max_age=600,
        )
    app.add_middleware(
        HygieneMiddleware,
        max_body_bytes=settings.max_body_bytes,
        body_timeout=settings.body_timeout,
        home=runtime.settings.home,
    )
    metrics.install(app, runtime)  # counts what the client finally got
    app.add_middleware(RequestIdMiddleware)  # outermost: every log line of a request has its id
    return app


def _router_of(module: str) -> Callable[[], APIRouter]:
    """Imports `hermes.server.<module>` and gives its router (as the gateway's platforms and
    the memory providers are imported by name)."""

    def build() -> APIRouter:
        router: APIRouter = importlib.import_module(f"hermes.server.{module}").router
        return router

    return build


LAZY_ROUTERS: list[tuple[tuple[str, ...], Callable[[], APIRouter]]] = [
    (("/api/jobs",), _router_of("jobs_api")),
    (("/v1/runs",), _router_of("runs")),
    # session_chat before sessions_api: the latter's {id:path} would take /chat
    (("/api/sessions",), _router_of("session_chat")),
    (("/api/memory/history", "/api/memory/revert"), _router_of("memory_history_api")),
    (("/api/sessions",), _router_of("sessions_api")),
    (("/api/memory",), _router_of("memory_api")),
    (("/api/skills", "/api/toolsets"), _router_of("skills_api")),
    (("/v1/capabilities",), _router_of("capabilities")),
    (("/api/users",), _router_of("users_api")),
    (("/api/usage",), _router_of("usage_api")),
    (("/api/keys",), _router_of("keys_api")),
    (("/api/logs",), _router_of("logs_api")),
    (("/api/gateway",), _router_of("gateway_api")),
    (("/api/mcp",), _router_of("mcp_api")),
]
"""Each part's path prefixes (every route of its router lies under one) and its router,
imported on the first request under them: most servers are never asked for most of these."""


def _stopper(daemon: Daemon) -> Callable[[], Awaitable[None]]:
    async def stop() -> None:
        assert daemon.stop is not None
        try:
            await daemon.stop()
        except Exception:
            log.exception("stopping %s failed", daemon.name)
        else:
            log.info("stopped %s", daemon.name)

    return stop


class TurnTracker:
    """Turns the server started on its own (shared idempotent computations); drained at shutdown."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[object]] = set()

    def spawn(self, coro: Awaitable[object]) -> asyncio.Task[object]:
        task: asyncio.Task[object] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
