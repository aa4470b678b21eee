"""`hermes mcp serve`: Hermes as an MCP server over stdio, so other agents and editors share
the owner's memory. It offers the owner's `memory` tool, `memory_read` (the notes as they are
now), `session_search` over every past conversation, and `cronjob`; each call runs the same
Hermes tool (same validation, scanning and scope rules) in the owner's scope."""

from __future__ import annotations

import json
from typing import Any

from hermes.memory.snapshot import render_scope
from hermes.runtime import Runtime
from hermes.store.base import DEFAULT_SCOPE
from hermes.tools.registry import Tool, ToolContext, Toolset, tool

EXPOSED = ("memory", "memory_read", "session_search", "cronjob")


@tool(name="memory_read")
def memory_read(ctx: ToolContext) -> str:
    """Read the owner's persistent notes as they are now: MEMORY.md (the agent's notes) and USER.md (who the user is)."""
    text = render_scope(ctx.settings.home, ctx.scope, ctx.settings)
    return text or "(no notes yet)"


def exposed_tools(runtime: Runtime) -> Toolset:
    """The Hermes tools this server offers (those the runtime has: cron may be off)."""
    found: list[Tool] = [memory_read]
    for name in EXPOSED:
        t = runtime.agent.toolset.get(name)
        if t is not None:
            found.append(t)
    return Toolset(found)


def build_server(runtime: Runtime) -> Any:
    """A low-level MCP server whose tools are Hermes tools with their own JSON schemas."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from hermes import __version__

    toolset = exposed_tools(runtime)
    ctx = ToolContext(
        scope=DEFAULT_SCOPE,
        session_id="mcp-serve",
        platform="mcp",
        services=runtime.services,
    )

    async def list_tools(_ctx: Any, _params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=name,
                    description=t.description,
                    input_schema=t.parameters,
                )
                for name in toolset.names()
                if (t := toolset.get(name)) is not None
            ]
        )

    async def call_tool(_ctx: Any, params: Any) -> Any:
        outcome = await toolset.call(params.name, json.dumps(params.arguments or {}), ctx)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text)],
            is_error=not outcome.ok,
        )

    return Server(
        "hermes",
        version=__version__,
        instructions="Hermes' memory: the owner's notes, searchable past conversations and jobs.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(runtime: Runtime) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(runtime)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
