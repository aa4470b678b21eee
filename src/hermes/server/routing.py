"""How a part's router joins an app: its routes themselves, as they were declared.

FastAPI's `include_router` keeps a lazy view of the router that builds every route's handler
and parameter models again, per app, on the first request that walks past it, and walks each
included router on every request. Hermes' routers carry their prefix and dependencies on the
routes already and are included without options, so adding their routes is the same app
without that work: no first request pays for building a part's routes (once per server, once
per profile's app) and matching is one pass over the app's routes.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI


def add_routes(app: FastAPI, router: APIRouter) -> None:
    """Add `router`'s routes to `app` as declared (its prefix and dependencies are on them)."""
    app.router.routes.extend(router.routes)
