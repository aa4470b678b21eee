"""Platforms that push messages to Hermes over HTTP (WhatsApp Cloud API, Twilio SMS): their
adapters receive requests on `hermes serve`'s own port under `/gateway/<platform>`.

The route does no work of its own: it finds the running adapter and hands it the request. The
adapter checks the platform's signature first, so an unsigned or wrongly signed request is a
403 that never reaches the allow-list, the store or the model. A platform that is not set up
is a 404; one that is set up but not connected at the moment is a 503 (the platform retries).
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from hermes.gateway.base import AdapterError, InboundHandler, PlatformAdapter

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

PREFIX = "/gateway"


class WebhookAdapter(PlatformAdapter):
    """An adapter fed by HTTP requests: `listen` holds the handler until `disconnect`."""

    def __init__(self) -> None:
        self._handler: InboundHandler | None = None
        self._closed = asyncio.Event()

    async def listen(self, handler: InboundHandler) -> None:
        self._closed.clear()
        self._handler = handler
        try:
            await self._closed.wait()
        finally:
            self._handler = None

    async def disconnect(self) -> None:
        self._closed.set()
        await self.close()

    async def close(self) -> None:
        """Release HTTP clients (called by `disconnect`)."""
        return None

    @property
    def listening(self) -> bool:
        return self._handler is not None

    @property
    def handler(self) -> InboundHandler:
        if self._handler is None:
            raise AdapterError(f"{self.name} is not listening yet", retryable=True)
        return self._handler

    @abstractmethod
    async def webhook(self, request: Request) -> Response:
        """Answer one request from the platform; verify its signature before anything else."""


def forbidden(why: str, platform: str) -> Response:
    log.warning("gateway: refused a %s webhook request: %s", platform, why)
    return Response(f"{why}\n", status_code=403, media_type="text/plain")
