"""`hermes memory setup|status|off`: choose, configure, connect once and say so."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from hermes.config.settings import load_settings
from tests.conftest import run_cli
from tests.memory.providers.honcho_api import KEY as HKEY
from tests.memory.providers.honcho_api import HonchoAPI
from tests.memory.providers.supermemory_api import KEY, SupermemoryAPI


async def test_setup_status_off(home: Path) -> None:
    async with SupermemoryAPI() as api:
        setup = await asyncio.to_thread(
            run_cli, "memory", "setup", "supermemory", "--base-url", api.base_url, "--api-key", KEY
        )
        assert setup.returncode == 0, setup.stderr
        assert f"connected to Supermemory at {api.base_url}" in setup.stdout
        assert KEY not in (home / "config.yaml").read_text()
        assert (home / ".env").stat().st_mode & 0o777 == 0o600
        assert load_settings().memory.provider == "supermemory"

        status = await asyncio.to_thread(run_cli, "memory", "status")
        assert status.returncode == 0 and "memory.provider: supermemory" in status.stdout

        off = await asyncio.to_thread(run_cli, "memory", "off")
        assert off.returncode == 0
        assert load_settings().memory.provider is None
        none = await asyncio.to_thread(run_cli, "memory", "status")
        assert "none" in none.stdout


async def test_a_wrong_key_is_a_sentence_not_a_traceback(home: Path) -> None:
    async with SupermemoryAPI() as api:
        result = await asyncio.to_thread(
            run_cli, "memory", "setup", "supermemory", "--base-url", api.base_url, "--api-key", "x"
        )
    assert result.returncode == 1
    assert "does not work yet" in result.stderr and "Traceback" not in result.stderr


def test_an_unknown_provider_name_is_refused(home: Path) -> None:
    result = run_cli("memory", "setup", "zep")
    assert result.returncode == 2 and "not a memory provider" in result.stderr
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "zep"}}))
    status = run_cli("memory", "status")
    assert status.returncode == 2 and "memory.provider" in status.stderr


async def test_setup_honcho_connects_once(home: Path) -> None:
    async with HonchoAPI() as api:
        setup = await asyncio.to_thread(
            run_cli, "memory", "setup", "honcho", "--base-url", api.base_url, "--api-key", HKEY
        )
        assert setup.returncode == 0, setup.stderr
        assert f"connected to Honcho at {api.base_url} (workspace hermes)" in setup.stdout
        assert any(method == "POST" and "/peers" in path for method, path, _ in api.requests)
    assert load_settings().memory.provider == "honcho"
    assert HKEY not in (home / "config.yaml").read_text()
