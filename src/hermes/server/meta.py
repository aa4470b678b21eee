"""`/health` (no auth), `/health/detailed` (behind the key) and `/v1/models`: what a client
asks before it chats."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse

from hermes import __version__
from hermes.models.errors import SETUP_HINT
from hermes.runtime import Runtime
from hermes.server.deps import get_runtime, require_auth, sent_server_key
from hermes.server.faults import disk_health
from hermes.server.model_names import model_or_404

router = APIRouter()

# a probe may call /health many times a second: the store's answer (its cheap checks:
# `Store.health(deep=False)`) is reused for a few seconds
HEALTH_CACHE_SECONDS = 5.0
PART_CHECK_TIMEOUT_S = 2.0
HEALTHY = frozenset({"ok", "off"})


async def _store_health(request: Request, runtime: Runtime) -> dict[str, Any]:
    state = request.app.state
    cached: tuple[float, dict[str, Any]] | None = getattr(state, "health_cache", None)
    now = time.monotonic()
    if cached is not None and now - cached[0] < HEALTH_CACHE_SECONDS:
        return cached[1]
    try:
        raw = await asyncio.to_thread(functools.partial(runtime.store.health, deep=False))
    except Exception as exc:  # a closed or broken store must still give an answer
        raw = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    # Unauthenticated endpoint: report the state, not the filesystem path.
    report = {k: v for k, v in raw.items() if k != "path"}
    state.health_cache = (now, report)
    return report


async def _parts_health(runtime: Runtime) -> dict[str, dict[str, Any]]:
    """Each part's own check (`hermes.health(name, check)`), bounded so one cannot hang /health."""

    async def one(check: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await asyncio.wait_for(check(runtime), PART_CHECK_TIMEOUT_S)
        except TimeoutError:
            return {"status": "error", "error": "the health check did not answer in time"}
        except Exception as exc:
            return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        return result

    checks = runtime.registry.health_checks
    results = await asyncio.gather(*(one(check) for _, check in checks))
    return {name: result for (name, _), result in zip(checks, results, strict=True)}


def _model_configured(runtime: Runtime) -> bool:
    """The built-in `openai` provider needs an endpoint and a model name; another provider
    (a plugin's) is set up once it gave the runtime a client that names its model."""
    model = runtime.settings.model
    if model.provider != "openai":
        return bool(runtime.model.model)
    return bool(model.base_url and model.name)


def _model_health(runtime: Runtime) -> dict[str, Any]:
    """The model part of /health/detailed: a missing model is the first thing to fix, then
    an endpoint whose latest call failed."""
    if _model_configured(runtime):  # configured; and answering, as far as this process saw
        return {**runtime.agent.model_calls.health(), "name": runtime.settings.model.name}
    return {
        "status": "not_configured",
        "reason": "no model is configured (model.base_url and model.name), so chats get a 503",
        "fix": SETUP_HINT,
    }


async def _part(runtime: Runtime, part: str) -> dict[str, Any] | None:
    """A part's own health check (None when it has none or it failed: /health answers
    whatever a part does, and /health/detailed says why)."""
    for name, check in runtime.registry.health_checks:
        if name != part:
            continue
        try:
            return await asyncio.wait_for(check(runtime), PART_CHECK_TIMEOUT_S)
        except Exception:
            return None
    return None


async def _adapters(runtime: Runtime) -> dict[str, Any] | None:
    """Each messaging adapter's state (SPEC §10); None when no gateway runs here."""
    adapters = (await _part(runtime, "gateway") or {}).get("adapters")
    return adapters if isinstance(adapters, dict) and adapters else None


async def _memory_provider(runtime: Runtime) -> dict[str, Any] | None:
    """The external memory provider, named with its state (SPEC §15); None when off."""
    found = await _part(runtime, "memory_provider")
    if not found or found.get("status") == "off":
        return None
    return {"name": found.get("provider"), "status": found.get("status")}


@router.get("/health")
@router.get("/v1/health", include_in_schema=False)
async def health(request: Request, runtime: Runtime = Depends(get_runtime)) -> JSONResponse:
    """Liveness: `ok` while the process serves (SPEC §1), the version and whether a model is
    configured; anonymous callers get nothing else (no paths, no parts: `/health/detailed`
    has them). The owner (the server key, or anyone on an open server) also sees each
    messaging adapter when the gateway runs (SPEC §10) and the external memory provider."""
    body: dict[str, Any] = {
        "status": "ok",
        "version": __version__,
        "model_configured": _model_configured(runtime),
    }
    if sent_server_key(request):
        adapters = await _adapters(runtime)
        if adapters is not None:
            body["adapters"] = adapters
        provider = await _memory_provider(runtime)
        if provider is not None:
            body["memory_provider"] = provider
    return JSONResponse(body)


@router.get("/health/detailed", dependencies=[Depends(require_auth)])
async def health_detailed(
    request: Request, runtime: Runtime = Depends(get_runtime)
) -> JSONResponse:
    """Every part's state behind the key: 503 when the store is unhealthy, `degraded` (with
    each reason) when a part, the disk or the model is not right."""
    store = await _store_health(request, runtime)
    parts = {"model": _model_health(runtime)}
    parts["disk"] = await asyncio.to_thread(disk_health, runtime.settings.home)
    parts.update(await _parts_health(runtime))
    ok = bool(store.get("ok"))
    degraded = [name for name, part in parts.items() if part.get("status") not in HEALTHY]
    body: dict[str, Any] = {
        "status": "ok" if ok and not degraded else "degraded",
        "version": __version__,
        "uptime": max(0, int(time.time()) - request.app.state.started_at),
        "store": store,
        "model_configured": _model_configured(runtime),
        "parts": parts,
    }
    if degraded or not ok:
        body["degraded"] = degraded
        body["reasons"] = {name: _reason(parts[name]) for name in degraded}
        if not ok:
            body["reasons"]["store"] = store.get("error") or store.get("integrity") or "unhealthy"
    return JSONResponse(body, status_code=200 if ok else 503)


def _reason(part: dict[str, Any]) -> str:
    reason = str(part.get("reason") or part.get("error") or part["status"])
    return f"{reason}; {part['fix']}" if part.get("fix") else reason


def _model_entry(request: Request, runtime: Runtime) -> dict[str, Any]:
    name = runtime.settings.server.model_name
    return {
        "id": name,
        "object": "model",
        "created": request.app.state.started_at,
        "owned_by": "hermes",
    }


@router.get("/v1/models", dependencies=[Depends(require_auth)])
async def list_models(request: Request, runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    return {"object": "list", "data": [_model_entry(request, runtime)]}


@router.get("/v1/models/{model_id:path}", dependencies=[Depends(require_auth)])
async def get_model(
    model_id: str, request: Request, runtime: Runtime = Depends(get_runtime)
) -> dict[str, Any]:
    """Any name a turn accepts (`model_names`), so a client's check and its chat agree."""
    entry = _model_entry(request, runtime)
    entry["id"] = model_or_404(model_id, runtime.settings)
    return entry
