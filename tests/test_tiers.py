"""The `integration` marker follows what a test uses, so new tests are put in the right tier."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import run_cli, run_cli_subprocess
from tests.tiers import SERVER_HELPERS, names_used, needs_a_real_server


def _starts_python() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def _calls_a_helper() -> None:
    run_cli_subprocess("--version")


def test_an_in_process_test_stays_in_the_fast_tier(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("integration") is None
    assert not SERVER_HELPERS & names_used(run_cli)


def test_a_subprocess_is_found_through_the_helpers_a_test_calls() -> None:
    assert SERVER_HELPERS & names_used(_starts_python)
    assert "run_cli_subprocess" in names_used(_calls_a_helper)
    assert "executable" in names_used(_calls_a_helper)  # through run_cli_subprocess's own code


SERVER_CONFIG = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}


def _configures_a_server() -> None:
    str(SERVER_CONFIG)


def test_a_command_line_in_a_constant_is_a_subprocess() -> None:
    """An MCP server configured as `sys.executable -m ...` is started as a process."""
    assert "executable" in names_used(_configures_a_server)
    assert "executable" not in names_used(_in_process)


def _in_process() -> None:
    run_cli("--version")


def _item(*fixtures: str, **params: str) -> Any:
    """What `needs_a_real_server` reads of a collected test."""
    return SimpleNamespace(
        fixturenames=list(fixtures), callspec=SimpleNamespace(params=params), function=_in_process
    )


def test_postgresql_dovecot_and_chromium_are_found_by_fixture_or_parameter() -> None:
    assert needs_a_real_server(_item("pg_url", "pg_database"))
    assert needs_a_real_server(_item("dovecot")) and needs_a_real_server(_item("browser"))
    assert needs_a_real_server(_item("chromium"))  # a test that starts a Chromium of its own
    assert needs_a_real_server(_item("store_url", store_url="postgresql"))
    assert not needs_a_real_server(_item("store_url", store_url="sqlite"))
    assert not needs_a_real_server(_item("home", "fake"))


def test_a_test_of_the_real_embedding_model_is_integration_too() -> None:
    semantic = _item("home")
    semantic.get_closest_marker = lambda name: pytest.mark.semantic if name == "semantic" else None
    assert needs_a_real_server(semantic)
