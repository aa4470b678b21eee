"""`GET /api/mcp`: each configured MCP server, its state (connected, connecting, error,
disabled…), why it failed, and the tools it offers as `mcp_<server>_<tool>` (issue 37).

Owner only: server names, commands' errors and tool lists describe the operator's setup.
Servers that were never started (an app without `hermes serve`'s service) are started here
and given a bounded moment, as `/health` does, so the answer says something true.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from hermes.runtime import Runtime
from hermes.server.deps import get_runtime, require_auth
from hermes.server.users_api import require_admin

router = APIRouter(
    prefix="/api/mcp", tags=["mcp"], dependencies=[Depends(require_auth), Depends(require_admin)]
)

FIRST_LOOK_S = 10.0
EXAMPLE = {
    "servers": {
        "github": {
            "status": "connected",
            "transport": "stdio",
            "error": None,
            "tools": [{"name": "mcp_github_search_issues", "description": "Search issues"}],
        },
        "docs": {
            "status": "error",
            "transport": "http",
            "error": "connection refused",
            "retry_in_s": 12.5,
            "tools": [],
        },
    }
}


@router.get(
    "",
    summary="MCP servers, their status and tools",
    responses={200: {"content": {"application/json": {"example": EXAMPLE}}}},
)
async def servers(runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """Every server under `mcp_servers:` with its state, last error and tools."""
    from hermes.mcp_servers.manager import McpManager  # the part's module, loaded on use

    manager = runtime.services.find(McpManager)
    if manager is None:
        return {"servers": {}}
    if manager.start():
        longest = max(c.config.connect_timeout for c in manager.connections.values())
        await manager.wait_settled(min(FIRST_LOOK_S, longest))
    report: dict[str, Any] = {}
    for name, status in manager.status().items():
        connection = manager.connections.get(name)
        tools = connection.tools if connection is not None else []
        report[name] = {
            **status,
            "error": status.get("error"),
            "tools": [{"name": t.name, "description": t.description} for t in tools],
        }
    return {"servers": dict(sorted(report.items()))}
