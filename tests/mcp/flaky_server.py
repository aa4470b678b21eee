"""A stdio MCP server for the tests, built with the SDK: `echo` answers, `crash` kills the
process in the middle of the call, `hang` never answers."""

from __future__ import annotations

import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("flaky")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def crash() -> str:
    """Exit the whole server process mid-call."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer."""
    while True:
        time.sleep(3600)


@server.tool()
def fail() -> str:
    """Refuse, so the result is an MCP error result."""
    raise ToolError("the flaky server refuses")


if __name__ == "__main__":
    server.run("stdio")
