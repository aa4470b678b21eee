"""`GET /api/mcp` (issue 37): each MCP server's state, error and tools, from a real stdio
server (mcp_server_time), one that cannot start, and one disabled; owner only."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr

from hermes.config.settings import Settings, load_settings

from .conftest import AUTH, SERVER_KEY, Api, open_api

SERVERS = {
    "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
    "broken": {"command": "/nonexistent/mcp-server-binary"},
    "later": {"command": sys.executable, "args": ["-m", "mcp_server_time"], "enabled": False},
}


@pytest.fixture
def mcp_settings(model_env: dict[str, str], home: Path) -> Settings:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": SERVERS}))
    settings = load_settings()
    settings.server.api_key = SecretStr(SERVER_KEY)
    return settings


@pytest.fixture
async def mcp_api(mcp_settings: Settings) -> AsyncIterator[Api]:
    async with open_api(mcp_settings) as api:
        api.client.headers.update(AUTH)
        yield api


async def test_servers_with_status_errors_and_tools(mcp_api: Api) -> None:
    deadline = asyncio.get_running_loop().time() + 30
    servers: dict[str, Any] = {}

    async def look() -> bool:
        nonlocal servers
        r = await mcp_api.client.get("/api/mcp")
        assert r.status_code == 200, r.text
        servers = r.json()["servers"]
        return servers["time"]["status"] != "connecting"

    first = (await mcp_api.client.get("/api/mcp")).json()["servers"]
    assert first["time"]["status"] in ("connecting", "connected")
    while not await look():  # the server process is starting: poll with a deadline
        await asyncio.sleep(0.05)
        assert asyncio.get_running_loop().time() < deadline, servers
    assert list(servers) == ["broken", "later", "time"]
    assert servers["time"]["status"] == "connected" and servers["time"]["error"] is None
    names = [t["name"] for t in servers["time"]["tools"]]
    assert "mcp_time_get_current_time" in names
    assert all(t["description"] for t in servers["time"]["tools"])
    assert servers["broken"]["status"] in ("error", "reconnecting")
    assert servers["broken"]["error"] and servers["broken"]["tools"] == []
    assert servers["later"]["status"] == "disabled"

    offered = (await mcp_api.client.get("/api/toolsets")).json()["toolsets"]["owner"]
    assert "mcp_time_get_current_time" in offered


async def test_no_servers_configured(keyed_api: Api) -> None:
    r = await keyed_api.client.get("/api/mcp")
    assert r.status_code == 200 and r.json() == {"servers": {}}


async def test_a_scoped_key_is_refused(mcp_api: Api) -> None:
    made = (await mcp_api.client.post("/api/keys", json={"user": "eve"})).json()
    r = await mcp_api.client.get("/api/mcp", headers={"Authorization": f"Bearer {made['secret']}"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "admin_only"
    assert "mcp_time" not in r.text
