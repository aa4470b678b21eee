"""All configured MCP servers of a runtime: a `ToolSource` the agent's toolset reads on every
turn, started lazily (the first turn, `hermes serve`, or a health check) and closed with the
runtime."""

from __future__ import annotations

import asyncio
from typing import Any

from hermes.config.settings import Settings
from hermes.mcp_servers.connection import McpConnection
from hermes.tools.registry import Tool

FIRST_TURN_WAIT_S = 10.0


class McpManager:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        log_dir = settings.home / "logs"
        self.connections = {
            name: McpConnection(name, config, log_dir)
            for name, config in settings.mcp_servers.items()
            if config.enabled
        }
        self.disabled = [n for n, c in settings.mcp_servers.items() if not c.enabled]
        self._started = False

    def start(self) -> bool:
        """Start every connection in the background; True if this call started them."""
        if self._started or not self.connections:
            return False
        self._started = True
        for connection in self.connections.values():
            connection.start()
        return True

    async def prepare(self) -> None:
        """Before a turn: start, and on the very first turn give the servers a bounded moment
        to connect so a one-shot `hermes chat -q` can use them. Later turns never wait."""
        if self.start():
            await self.wait_settled(
                min(
                    FIRST_TURN_WAIT_S,
                    max(c.config.connect_timeout for c in self.connections.values()),
                )
            )

    async def wait_settled(self, within: float) -> None:
        await asyncio.gather(*(c.wait_settled(within) for c in self.connections.values()))

    def current_tools(self) -> list[Tool]:
        return [t for c in self.connections.values() for t in c.tools]

    def status(self) -> dict[str, dict[str, Any]]:
        report = {name: c.status() for name, c in self.connections.items()}
        for name in self.disabled:
            report[name] = {"status": "disabled", "tools": []}
        return report

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self.connections.values()))
