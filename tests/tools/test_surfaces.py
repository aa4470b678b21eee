"""Toolsets per surface and scope, and approvals on every surface: the API and one-shot
`chat -q` have nobody to ask, so a dangerous command never runs there."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermes.cli.main import app
from hermes.config.settings import Settings, load_settings
from hermes.cron.runner import execute_job
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.server.conftest import AUTH, open_api

OWNER_ONLY = {"terminal", "process", "write_file", "patch", "read_file", "delegate_task"}


def _tool_names(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def _tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_end_users_are_never_offered_terminal_or_file_writes(
    settings: Settings, fake: FakeModel, tmp_path: Path
) -> None:
    from pydantic import SecretStr

    settings.server.api_key = SecretStr(AUTH["Authorization"].split()[1])
    settings.tools.workdir = tmp_path
    fake.enqueue(
        Text("owner"), Text("user"), ToolCalls([("terminal", {"command": "id"})]), Text("x")
    )
    async with open_api(settings) as api:
        api.client.headers.update(AUTH)
        assert (await api.chat("hi")).status_code == 200
        user = {"X-Hermes-User-Id": "bob"}
        assert (await api.chat("hi", headers=user)).status_code == 200
        # even a model that calls a tool it was not offered gets nothing
        assert (await api.chat("run id", headers=user)).status_code == 200
    owner, end_user, _, refused = fake.chat_requests()
    assert OWNER_ONLY <= _tool_names(owner)
    assert _tool_names(end_user) == {
        "memory",
        "session_search",
        "web_search",
        "web_extract",
        "skills_list",
        "skill_view",
    }
    assert "no tool named 'terminal'" in _tool_results(refused)[0]


async def test_end_user_toolsets_can_be_widened_by_config(
    runtime: Runtime, settings: Settings
) -> None:
    settings.tools.end_user_toolsets = ["web", "read_file"]
    assert runtime.agent.toolset_for("user:bob", "api").names() == [
        "read_file",
        "web_search",
        "web_extract",
    ]
    cron = runtime.agent.toolset_for("default", "cron").names()
    assert "memory" not in cron and "cronjob" not in cron and "terminal" in cron


async def test_a_dangerous_command_from_the_api_never_runs(
    settings: Settings, fake: FakeModel, tmp_path: Path
) -> None:
    settings.tools.workdir = tmp_path
    (tmp_path / "victim").mkdir()
    fake.enqueue(ToolCalls([("terminal", {"command": "rm -rf victim"})]), Text("could not"))
    async with open_api(settings) as api:
        assert (await api.chat("delete it")).status_code == 200
    [result] = _tool_results(fake.chat_requests()[1])
    assert "Approval needed" in result and "surface: api" in result
    assert (tmp_path / "victim").is_dir()


def test_a_dangerous_command_from_chat_q_never_runs(
    model_env: dict, fake: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # hermes chat works in its current directory
    (tmp_path / "victim").mkdir()
    fake.enqueue(
        ToolCalls([("terminal", {"command": "pwd; rm -rf victim"})]),
        ToolCalls([("terminal", {"command": "pwd"})]),
        Text("refused"),
    )
    result = CliRunner().invoke(app, ["chat", "-q", "clean up"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "refused"
    assert (tmp_path / "victim").is_dir()
    assert "Approval needed" in _tool_results(fake.chat_requests()[1])[0]
    assert _tool_results(fake.chat_requests()[2])[1].startswith(str(tmp_path.resolve()))


async def test_cron_runs_get_the_cron_toolset_and_cannot_approve(
    runtime: Runtime, fake: FakeModel, settings: Settings, tmp_path: Path
) -> None:
    settings.tools.workdir = tmp_path
    (tmp_path / "victim").mkdir()
    fake.enqueue(ToolCalls([("terminal", {"command": "rm -rf victim"})]), Text("done"))
    job = {"id": "abcdef123456", "name": "cleanup", "prompt": "clean", "schedule": "every 1h"}
    result = await execute_job(runtime.agent, "default", job, started=datetime.now(UTC), tz=UTC)
    assert result.status == "ok"
    first = fake.chat_requests()[0]
    assert "terminal" in _tool_names(first) and "memory" not in _tool_names(first)
    assert "cronjob" not in _tool_names(first)
    assert "Approval needed" in _tool_results(fake.chat_requests()[1])[0]
    assert (tmp_path / "victim").is_dir()


def test_workdir_comes_from_hermes_workdir(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_WORKDIR", str(tmp_path))
    assert load_settings().tools.workdir == tmp_path
