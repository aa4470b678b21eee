"""`GET /v1/capabilities`: what this server can do, for clients that adapt to it (the
original's shape, our names). Features are worked out from the routes the app really has,
so a feature is never claimed before its route exists, and endpoints list those routes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.routing import Match

from hermes.runtime import Runtime
from hermes.server.deps import (
    SESSION_HEADER,
    SESSION_KEY_HEADER,
    get_runtime,
    require_auth,
    server_key,
)
from hermes.server.model_names import offered_models

router = APIRouter(tags=["meta"], dependencies=[Depends(require_auth)])

# feature → the (method, path) that provides it
FEATURE_ROUTES: dict[str, tuple[str, str]] = {
    "chat_completions": ("POST", "/v1/chat/completions"),
    "chat_completions_streaming": ("POST", "/v1/chat/completions"),
    "responses_api": ("POST", "/v1/responses"),
    "responses_streaming": ("POST", "/v1/responses"),
    "run_submission": ("POST", "/v1/runs"),
    "run_status": ("GET", "/v1/runs/{run_id}"),
    "run_events_sse": ("GET", "/v1/runs/{run_id}/events"),
    "run_stop": ("POST", "/v1/runs/{run_id}/stop"),
    "run_approval_response": ("POST", "/v1/runs/{run_id}/approval"),
    "tool_progress_events": ("GET", "/v1/runs/{run_id}/events"),
    "approval_events": ("POST", "/v1/runs/{run_id}/approval"),
    "jobs_api": ("GET", "/api/jobs"),
    "sessions_api": ("GET", "/api/sessions"),
    "session_chat": ("POST", "/api/sessions/{session_id}/chat"),
    "memory_api": ("GET", "/api/memory"),
    "memory_history": ("GET", "/api/memory/history"),
    "users_api": ("GET", "/api/users"),
    "skills_api": ("GET", "/api/skills"),
}


def _has_route(app: Any, method: str, path: str) -> bool:
    """Whether a request `method path` reaches a route of the app (path parameters filled
    with a placeholder); asks the routes themselves, as the router does."""
    concrete = "/".join("x" if p.startswith("{") else p for p in path.split("/"))
    scope = {"type": "http", "method": method, "path": concrete, "root_path": ""}
    return any(route.matches(scope)[0] == Match.FULL for route in app.routes)


def _endpoints(app: Any) -> dict[str, dict[str, str]]:
    """Every documented operation by its name (the OpenAPI operationId)."""
    endpoints: dict[str, dict[str, str]] = {}
    for path, operations in app.openapi().get("paths", {}).items():
        for method, operation in operations.items():
            name = str(operation.get("operationId") or f"{method} {path}")
            endpoints[name] = {"method": method.upper(), "path": path}
    return endpoints


@router.get(
    "/v1/capabilities",
    summary="What this server can do",
    responses={
        200: {
            "content": {
                "application/json": {
                    "example": {
                        "object": "hermes.capabilities",
                        "platform": "hermes",
                        "model": "hermes",
                        "auth": {"type": "bearer", "required": True},
                        "features": {"chat_completions": True, "run_submission": False},
                        "endpoints": {"list_sessions": {"method": "GET", "path": "/api/sessions"}},
                    }
                }
            }
        }
    },
)
async def capabilities(request: Request, runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """Model, auth, how tools run, features (true only where the route exists) and every
    endpoint by name."""
    app = request.app
    features: dict[str, Any] = {
        name: _has_route(app, method, path) for name, (method, path) in FEATURE_ROUTES.items()
    }
    features["session_continuity_header"] = SESSION_HEADER
    features["session_key_header"] = SESSION_KEY_HEADER
    features["user_header"] = "X-Hermes-User-Id"
    features["cors"] = bool(runtime.settings.server.cors_origins)
    endpoints = _endpoints(app)
    listed = {(e["method"], e["path"]) for e in endpoints.values()}
    for name, (method, path) in FEATURE_ROUTES.items():  # routes kept out of the document
        if features[name] and (method, path) not in listed:
            endpoints.setdefault(name, {"method": method, "path": path})
    return {
        "object": "hermes.capabilities",
        "platform": "hermes",
        "model": offered_models(runtime.settings)[0],
        "auth": {"type": "bearer", "required": server_key(runtime) is not None},
        "runtime": {
            "mode": "server_agent",
            "tool_execution": "server",
            "split_runtime": False,
            "description": "Hermes runs the agent loop and its tools on the server; clients "
            "send messages and get answers (tools a client sends run on the client).",
        },
        "features": features,
        "endpoints": endpoints,
    }
