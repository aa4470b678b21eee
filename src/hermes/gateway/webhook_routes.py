"""The `/gateway/<platform>` routes of `hermes serve`: each request goes to the running
gateway's webhook adapter for that platform (WhatsApp, SMS, a plugin's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from hermes.gateway.runner import Gateway
from hermes.gateway.webhooks import PREFIX, WebhookAdapter

if TYPE_CHECKING:
    from fastapi import APIRouter

    from hermes.runtime import Runtime


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def _dispatch(platform: str, request: Request) -> Response:
    gateway = _runtime(request).services.find(Gateway)
    if gateway is None or platform not in gateway.specs:
        return Response(
            f"{platform!r} is not a messaging platform set up on this server\n",
            status_code=404,
            media_type="text/plain",
        )
    adapter = gateway.adapters.get(platform)
    if not isinstance(adapter, WebhookAdapter) or not adapter.listening:
        return Response(
            f"{platform} is set up but not connected right now; try again shortly\n",
            status_code=503,
            media_type="text/plain",
            headers={"Retry-After": "5"},
        )
    return await adapter.webhook(request)


def router() -> APIRouter:
    """`GET|POST /gateway/{platform}`: no Hermes bearer key (the platforms cannot send one);
    each adapter authenticates its platform's signature instead. FastAPI is imported here, not
    at the top: every command that asks which platforms are configured imports this module,
    and FastAPI costs ~0.4 s a one-shot `hermes chat -q` does not need."""
    from fastapi import APIRouter

    api = APIRouter()

    @api.api_route(PREFIX + "/{platform}", methods=["GET", "POST"], include_in_schema=False)
    async def webhook(platform: str, request: Request) -> Response:
        return await _dispatch(platform, request)

    return api
