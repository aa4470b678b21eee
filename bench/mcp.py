"""MCP tool-call overhead: what a call through Hermes to an MCP server costs, against a plain
in-process Hermes tool, over stdio and streamable HTTP; plus the time to connect.

    .venv/bin/python bench/mcp.py [--calls 200]

Rows:
  in-process tool    a Hermes @tool called through Toolset.call (the floor)
  mcp stdio          mcp_<server>_echo on a local MCPServer subprocess over stdio
  mcp http           the same tool on a streamable-HTTP MCPServer on loopback
  connect (stdio)    start the subprocess, handshake, list tools (mcp-server-time)
Everything is local; no model is called.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

# this file is named mcp.py: keep its folder off the path so `import mcp` finds the SDK
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import uvicorn  # noqa: E402
import yaml  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

from hermes.config.settings import load_settings  # noqa: E402
from hermes.mcp_servers.manager import McpManager  # noqa: E402
from hermes.services import Services  # noqa: E402
from hermes.tools.registry import ToolContext, Toolset, tool  # noqa: E402

ECHO_SERVER = '''
from mcp.server.mcpserver import MCPServer
server = MCPServer("bench")

@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text

server.run("stdio")
'''


@tool
def echo(text: str) -> str:
    """Say the text back.

    Args:
        text: what to say
    """
    return text


def http_server() -> tuple[uvicorn.Server, int]:
    server = MCPServer("bench-http", log_level="ERROR")

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        server.streamable_http_app(), host="127.0.0.1", port=port, log_level="error"
    )
    uv = uvicorn.Server(config)
    threading.Thread(target=uv.run, daemon=True).start()
    while not uv.started:
        time.sleep(0.01)
    return uv, port


async def timed(calls: int, one: Callable[[], Awaitable[object]]) -> list[float]:
    for _ in range(10):  # warm-up
        await one()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await one()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def row(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return (
        f"{name:20} {len(samples):>6} {statistics.median(ordered):>9.3f} {p95:>9.3f} "
        f"{statistics.fmean(ordered):>9.3f}"
    )


async def main(calls: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-mcp-"))
    script = home / "echo_server.py"
    script.write_text(ECHO_SERVER)
    uv, port = http_server()
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "mcp_servers": {
                    "local": {"command": sys.executable, "args": [str(script)]},
                    "web": {"url": f"http://127.0.0.1:{port}/mcp"},
                    "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
                }
            }
        )
    )
    settings = load_settings(home, env={})
    manager = McpManager(settings)
    started = time.perf_counter()
    manager.start()
    await manager.connections["time"].wait_settled(30)
    connect_ms = (time.perf_counter() - started) * 1000
    await manager.wait_settled(30)
    toolset = Toolset([echo]).plus_source(manager)
    ctx = ToolContext(scope="default", session_id="bench", services=Services(settings))
    rows = [
        (
            "in-process tool",
            await timed(calls, lambda: toolset.call("echo", '{"text": "hi"}', ctx)),
        ),
        (
            "mcp stdio",
            await timed(calls, lambda: toolset.call("mcp_local_echo", '{"text": "hi"}', ctx)),
        ),
        (
            "mcp http",
            await timed(calls, lambda: toolset.call("mcp_web_echo", '{"text": "hi"}', ctx)),
        ),
    ]
    outcome = await toolset.call("mcp_local_echo", '{"text": "check"}', ctx)
    assert outcome.ok and outcome.text == "check", outcome
    await manager.aclose()
    uv.should_exit = True
    print(f"{'path':20} {'calls':>6} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9}")
    for name, samples in rows:
        print(row(name, samples))
    print(
        f"{'connect (stdio)':20} {1:>6} {connect_ms:>9.1f}   (mcp-server-time: spawn, handshake, list)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    asyncio.run(main(parser.parse_args().calls))
