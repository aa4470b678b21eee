"""Mem0's store (qdrant's local mode) admits one process at a time, and a running server's
Mem0 worker holds it: `hermes memory status` and `hermes users forget` from another process
then use that worker (its socket in the home) instead of failing on the lock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel
from tests.conftest import run_cli, run_cli_subprocess
from tests.memory.providers.conftest import (
    lyon_and_oslo,
    provider_of,
)

pytestmark = [pytest.mark.semantic]


async def test_status_and_forget_beside_a_running_server(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    await lyon_and_oslo(fake, runtime, "user:", "a")
    assert (mem0_home / "mem0" / "worker.sock").exists()

    status = await asyncio.to_thread(run_cli, "memory", "status")
    assert status.returncode == 0, status.stderr
    assert "memory.provider: mem0 — mem0 runs locally" in status.stdout

    forgot = await asyncio.to_thread(
        run_cli_subprocess, "users", "forget", "alice", "--yes", "--json", timeout=240
    )
    assert forgot.returncode == 0, forgot.stderr
    assert json.loads(forgot.stdout)["provider_memory"] == 1
    provider = provider_of(runtime)
    assert await provider.search("user:alice", "where does the user live", 5) == []
    assert await provider.search("user:bob", "where does the user live", 5) == ["Bob lives in Oslo"]

    await runtime.aclose()  # the holder stops: its socket goes with it
    assert not (mem0_home / "mem0" / "worker.sock").exists()


def test_setup_mem0_opens_the_local_store(mem0_home: Path) -> None:
    (mem0_home / "config.yaml").unlink()
    setup = run_cli("memory", "setup", "mem0", timeout=240)
    assert setup.returncode == 0, setup.stderr
    assert "memory.provider: mem0 — mem0 runs locally: vectors in" in setup.stdout
    assert (mem0_home / "mem0" / "qdrant").is_dir()
    assert not (mem0_home / "mem0" / "worker.sock").exists()  # its worker stopped
