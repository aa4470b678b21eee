"""The common part of the loopback platform stand-ins (WhatsApp, Twilio, Slack, Discord): an
aiohttp server on 127.0.0.1, a record of what the bot sent, waiting for sends with a deadline,
and scripted failures ("answer the next N calls to this endpoint with that error")."""

from __future__ import annotations

import asyncio
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """JSON with `Content-Type: application/json` exactly (no charset), as the real APIs send
    it: discord.py, for one, reads a body as JSON only when the header is exactly that."""
    data = json.dumps(body).encode("utf-8")
    return web.Response(body=data, status=status, headers=headers, content_type="application/json")


@dataclass
class Failure:
    endpoint: str
    status: int
    body: Any
    headers: dict[str, str]


class LoopbackServer(ABC):
    """Subclasses add routes in `routes(app)`; `async with Sub() as api:` starts it."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.calls: list[str] = []
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        """Called with each accepted message (benchmarks time replies with it)."""
        self._failures: list[Failure] = []
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @abstractmethod
    def routes(self, app: web.Application) -> None:
        """Add the platform's endpoints."""

    async def start(self) -> Any:
        app = web.Application(client_max_size=20 * 1024 * 1024)
        self.routes(app)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> Any:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting -------------------------------------------------------------------------

    def fail(self, endpoint: str, status: int, body: Any, times: int = 1, **headers: str) -> None:
        """Answer the next `times` calls to `endpoint` with `status` and JSON `body`."""
        for _ in range(times):
            self._failures.append(Failure(endpoint, status, body, headers))

    def failure(self, endpoint: str) -> web.Response | None:
        self.calls.append(endpoint)
        for i, f in enumerate(self._failures):
            if f.endpoint == endpoint:
                del self._failures[i]
                return json_response(f.body, f.status, f.headers)
        return None

    async def record(self, message: dict[str, Any]) -> None:
        message["sent_at"] = time.perf_counter()
        self.sent.append(message)
        for listener in self.listeners:
            listener(message)
        async with self._changed:
            self._changed.notify_all()

    def revise(self, match: dict[str, Any], field: str, text: str) -> None:
        """An edit: the sent message matching `match` now reads `text`, as the chat shows it
        (`first_<field>` keeps what was sent first)."""
        for message in self.sent:
            if all(message.get(k) == v for k, v in match.items()):
                message.setdefault(f"first_{field}", message.get(field))
                message[field] = text

    async def wait_for_sent(self, n: int, within: float = 10.0) -> list[dict[str, Any]]:
        """Wait until at least `n` messages were sent (deadline, no fixed sleep)."""
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: len(self.sent) >= n), within)
            except TimeoutError:
                raise AssertionError(
                    f"expected {n} sent messages within {within}s, got {len(self.sent)}: "
                    f"{self.sent}"
                ) from None
        return self.sent
