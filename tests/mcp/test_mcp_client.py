"""MCP servers as tool sources, against real servers: `mcp-server-time` (stdio, from the
package index), a streamable-HTTP server from the SDK, one that crashes mid-call and one that
never answers."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from hermes.agent.turn import TurnRequest
from hermes.cli.main import app as cli
from hermes.config.settings import load_settings
from hermes.mcp_servers.manager import McpManager
from hermes.mcp_servers.tools import tool_name
from hermes.runtime import Runtime, build_runtime
from hermes.server.app import create_app
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

if TYPE_CHECKING:
    from tests.mcp.http_server import HttpMcpServer

FLAKY = str(Path(__file__).with_name("flaky_server.py"))
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}


def configure(home: Path, servers: dict) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}))


@pytest.fixture
async def make_runtime(
    model_env: dict[str, str], home: Path
) -> AsyncIterator[Callable[[dict], Runtime]]:
    made: list[Runtime] = []

    def make(servers: dict) -> Runtime:
        configure(home, servers)
        settings = load_settings()
        settings.model.max_retries = 0
        runtime = build_runtime(settings)
        for connection in runtime.services.get(McpManager).connections.values():
            connection.backoff_start = 0.05
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        await runtime.aclose()


async def until(predicate: Callable[[], bool], within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


def tool_results(fake: FakeModel) -> list[str]:
    return [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]


@pytest.fixture
def http_server() -> Iterator[HttpMcpServer]:
    from tests.mcp.http_server import HttpMcpServer  # the MCP SDK's server: imported by its tests

    with HttpMcpServer() as server:
        yield server


async def test_stdio_time_server_tools_reach_the_model(
    make_runtime: Callable[[dict], Runtime], fake: FakeModel
) -> None:
    runtime = make_runtime({"time": {**TIME, "tools": ["get_current_time"]}})
    fake.enqueue(
        ToolCalls([("mcp_time_get_current_time", {"timezone": "Asia/Tokyo"})]), Text("It is late.")
    )
    result = await runtime.agent.run_turn(TurnRequest("time in Tokyo?", session_id="s1"))
    assert result.content == "It is late."
    first = fake.chat_requests()[0]
    names = {t["function"]["name"] for t in first["tools"]}
    assert "mcp_time_get_current_time" in names and "mcp_time_convert_time" not in names
    schema = next(t for t in first["tools"] if t["function"]["name"] == "mcp_time_get_current_time")
    assert "timezone" in schema["function"]["parameters"]["properties"]
    [answer] = tool_results(fake)
    assert json.loads(answer)["timezone"] == "Asia/Tokyo"


async def test_streamable_http_server_with_headers_and_exclude(
    make_runtime: Callable[[dict], Runtime], fake: FakeModel, http_server: HttpMcpServer
) -> None:
    runtime = make_runtime(
        {
            "notes": {
                "url": http_server.url,
                "headers": {"X-Api-Token": "tok-123"},
                "exclude": ["secret"],
            }
        }
    )
    fake.enqueue(
        ToolCalls([("mcp_notes_add", {"a": 2, "b": 40}), ("mcp_notes_secret", {})]),
        Text("42"),
    )
    await runtime.agent.run_turn(TurnRequest("add", session_id="s1"))
    added, secret = tool_results(fake)
    assert added == "42"
    assert secret.startswith("Error: there is no tool named 'mcp_notes_secret'")
    assert any(h.get("x-api-token") == "tok-123" for h in http_server.headers)
    status = runtime.services.get(McpManager).status()["notes"]
    assert status["status"] == "connected" and status["transport"] == "http"
    assert sorted(status["tools"]) == ["mcp_notes_add", "mcp_notes_shout"]


async def test_a_server_that_crashes_mid_call_is_reported_and_restarted(
    make_runtime: Callable[[dict], Runtime], fake: FakeModel
) -> None:
    runtime = make_runtime({"flaky": {"command": sys.executable, "args": [FLAKY]}})
    manager = runtime.services.get(McpManager)
    # connected before the turn: a first turn waits only a bounded moment for servers, which
    # a Python server's start can take longer than on a loaded machine
    manager.start()
    await until(lambda: manager.connections["flaky"].state == "connected", within=60)
    fake.enqueue(ToolCalls([("mcp_flaky_crash", {})]), Text("it crashed"))
    await runtime.agent.run_turn(TurnRequest("crash it", session_id="s1"))
    [crashed] = tool_results(fake)
    assert crashed.startswith("Error:") and "went away during crash" in crashed
    connection = manager.connections["flaky"]
    await until(lambda: connection.connects >= 2 and connection.state == "connected")
    fake.enqueue(ToolCalls([("mcp_flaky_echo", {"text": "back"})]), Text("ok"))
    await runtime.agent.run_turn(TurnRequest("echo", session_id="s2"))
    assert tool_results(fake) == ["echo: back"]


async def test_a_call_that_never_answers_times_out(
    make_runtime: Callable[[dict], Runtime], fake: FakeModel
) -> None:
    runtime = make_runtime({"flaky": {"command": sys.executable, "args": [FLAKY], "timeout": 1}})
    fake.enqueue(
        ToolCalls([("mcp_flaky_fail", {})]), ToolCalls([("mcp_flaky_hang", {})]), Text("gave up")
    )
    result = await runtime.agent.run_turn(TurnRequest("hang", session_id="s1"))
    assert result.content == "gave up"
    failed, hung = tool_results(fake)
    assert hung == "Error: MCP server 'flaky' did not answer hang within 1s"
    assert (
        failed
        == "Error: MCP server 'flaky' says fail failed: Error executing tool fail: the flaky server refuses"
    )


async def test_a_server_that_never_answers_does_not_block_and_is_reported(
    make_runtime: Callable[[dict], Runtime], fake: FakeModel, home: Path
) -> None:
    silent = {
        "command": sys.executable,
        "args": ["-c", "import time; time.sleep(120)"],
        "connect_timeout": 0.5,
    }
    runtime = make_runtime({"silent": silent, "missing": {"command": str(home / "no-such-binary")}})
    fake.enqueue(Text("no tools, still here"))
    started = time.monotonic()
    result = await runtime.agent.run_turn(TurnRequest("hi", session_id="s1"))
    assert result.content == "no tools, still here"
    assert time.monotonic() - started < 5  # the first turn waits at most connect_timeout
    assert not any(
        t["function"]["name"].startswith("mcp_") for t in fake.chat_requests()[0]["tools"]
    )
    status = runtime.services.get(McpManager).status()
    assert status["silent"]["status"] == "error" and "did not answer" in status["silent"]["error"]
    assert status["missing"]["status"] == "error" and status["missing"]["error"]
    transport = httpx.ASGITransport(app=create_app(runtime, close_runtime=False))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        health = (await client.get("/health/detailed")).json()
    assert health["status"] == "degraded"
    assert health["parts"]["mcp"]["status"] == "error"
    assert health["parts"]["mcp"]["servers"]["silent"]["status"] == "error"
    reason = health["reasons"]["mcp"]  # what the dashboard's Status shows, with the fix
    assert "silent error: " in reason and "missing error" in reason and "hermes mcp list" in reason


def test_mcp_list_and_doctor(home: Path) -> None:
    configure(home, {"time": TIME, "broken": {"command": str(home / "nope")}})
    runner = CliRunner()
    out = runner.invoke(cli, ["mcp", "list", "--json"])
    assert out.exit_code == 1, out.output
    servers = json.loads(out.stdout)["servers"]
    assert servers["time"]["status"] == "connected"
    assert "mcp_time_convert_time" in servers["time"]["tools"]
    assert servers["broken"]["status"] == "error"
    doctor = runner.invoke(cli, ["doctor"])
    assert "server time: connected (2 tools)" in doctor.stdout
    assert "FAIL   server broken: error" in doctor.stdout


def test_tool_names_are_safe_and_bounded() -> None:
    assert tool_name("time", "get.time now") == "mcp_time_get_time_now"
    long = tool_name("server", "x" * 100)
    assert len(long) == 64 and long != tool_name("server", "x" * 99)


def test_config_errors_name_the_server(home: Path) -> None:
    from hermes.config.settings import ConfigError

    configure(home, {"bad name": {"command": "x"}})
    with pytest.raises(ConfigError, match="not an MCP server name"):
        load_settings()
    configure(home, {"both": {"command": "x", "url": "http://127.0.0.1/mcp"}})
    with pytest.raises(ConfigError, match="exactly one of"):
        load_settings()
