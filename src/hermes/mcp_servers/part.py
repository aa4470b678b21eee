"""The MCP part: one `McpManager` per runtime (a live tool source for the agent), started by
`hermes serve` or the first turn, its status in `/health`, and `hermes mcp …`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.plugins import Daemon, Registry

if TYPE_CHECKING:
    from hermes.mcp_servers.manager import McpManager
    from hermes.runtime import Runtime

HEALTH_FIRST_WAIT_S = 15.0
OK_STATES = frozenset({"connected", "connecting", "disabled"})


def _manager(runtime: Runtime) -> object:
    from hermes.mcp_servers.manager import McpManager

    return McpManager(runtime.settings)


def _get(runtime: Runtime) -> McpManager:
    from hermes.mcp_servers.manager import McpManager

    return runtime.services.get(McpManager)


def _daemon(runtime: Runtime) -> Daemon | None:
    if not runtime.settings.mcp_servers:
        return None
    manager = _get(runtime)

    async def start() -> None:
        manager.start()  # connects in the background: startup never waits for a server

    return Daemon("mcp servers", start, manager.aclose)


async def _health(runtime: Runtime) -> dict[str, Any]:
    manager = _get(runtime)
    if not manager.connections:
        return {"status": "off", "servers": manager.status()}
    if manager.start():  # not started by a daemon (doctor): let the first attempts finish
        longest = max(c.config.connect_timeout for c in manager.connections.values())
        await manager.wait_settled(min(HEALTH_FIRST_WAIT_S, longest))
    servers = manager.status()
    failing = [n for n, s in servers.items() if s["status"] not in OK_STATES]
    if not failing:
        return {"status": "ok", "servers": servers}
    down = [
        f"{n} {servers[n]['status']}"
        + (f": {servers[n]['error']}" if servers[n].get("error") else "")
        for n in failing
    ]
    return {  # the reason and fix are what the dashboard's Status shows for this part
        "status": "error",
        "servers": servers,
        "reason": "MCP servers failing: " + "; ".join(down),
        "fix": "check each server's command or URL under mcp_servers (hermes mcp list)",
    }


def _cli() -> Any:
    from hermes.mcp_servers.cli import app

    return app


def register(hermes: Registry) -> None:
    hermes.component(_manager)
    hermes.tool_source(_get)
    hermes.daemon(_daemon)
    hermes.health("mcp", _health)
    hermes.command("mcp", _cli)
