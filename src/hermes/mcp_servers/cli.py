"""`hermes mcp list` (each configured server: connected or why not, and its tools) and
`hermes mcp serve` (Hermes' memory, search and cron as an MCP server on stdio)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import typer

from hermes.cli_common import fail, settings_or_exit
from hermes.mcp_servers.sdk import McpUnavailableError, require_sdk

app = typer.Typer(
    help="MCP: tools from MCP servers, and Hermes as an MCP server.", no_args_is_help=True
)


async def _probe(settings: Any) -> dict[str, dict[str, Any]]:
    from hermes.mcp_servers.manager import McpManager

    manager = McpManager(settings)
    try:
        manager.start()
        await manager.wait_settled(
            max((c.config.connect_timeout for c in manager.connections.values()), default=0) + 1
        )
        return manager.status()
    finally:
        await manager.aclose()


@app.command("list")
def list_servers(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Connect to each configured server once and show its state and tools."""
    settings = settings_or_exit()
    if not settings.mcp_servers:
        if as_json:
            typer.echo(json.dumps({"servers": {}}))
        else:
            typer.echo("No MCP servers configured (add them under mcp_servers: in config.yaml).")
        return
    try:
        require_sdk()
    except McpUnavailableError as exc:
        fail(str(exc), 2)
    report = asyncio.run(_probe(settings))
    if as_json:
        typer.echo(json.dumps({"servers": report}, indent=2))
    else:
        for name, status in report.items():
            detail = f" — {status['error']}" if status.get("error") else ""
            typer.echo(f"{name:20} {status['status']:12} {len(status['tools'])} tools{detail}")
            for tool in status["tools"]:
                typer.echo(f"    {tool}")
    if any(s["status"] not in ("connected", "disabled") for s in report.values()):
        raise typer.Exit(1)


@app.command("serve")
def serve() -> None:
    """Serve the owner's memory, session_search and cron over MCP on stdio (for other agents)."""
    settings = settings_or_exit()
    try:
        require_sdk()
    except McpUnavailableError as exc:
        fail(str(exc), 2)
    from hermes.mcp_servers.serve import serve_stdio
    from hermes.runtime import build_runtime

    # stdout carries the protocol: every log line goes to stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)

    async def main() -> None:
        runtime = build_runtime(settings)
        try:
            await serve_stdio(runtime)
        finally:
            await runtime.aclose()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
