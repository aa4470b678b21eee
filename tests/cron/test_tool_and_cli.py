"""The `cronjob` agent tool (through a real turn) and `hermes cron` (as a subprocess)."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

from hermes.agent.turn import TurnRequest
from hermes.config.settings import Settings
from hermes.cron.jobs import create_job
from hermes.cron.store import JobStore
from hermes.runtime import Runtime
from hermes.scopes import scope_root
from hermes.testing.fake_model import Error, FakeModel, Text, ToolCalls
from tests.conftest import run_cli
from tests.cron.conftest import outputs, read_jobs


def _is_cron_run(body: dict) -> bool:
    return any("scheduled cron job" in (m.get("content") or "") for m in body["messages"])


def _tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_the_agent_creates_and_lists_jobs_in_its_own_scope(
    runtime: Runtime, fake: FakeModel, settings: Settings
) -> None:
    # end users get memory, search, web and skills by default; this install also lets them
    # schedule jobs (in their own scope)
    settings.tools.end_user_toolsets = ["memory", "session_search", "web", "skills", "cron"]
    fake.enqueue(
        ToolCalls(
            [
                (
                    "cronjob",
                    {
                        "action": "create",
                        "schedule": "weekdays at 9am",
                        "prompt": "Summarise Go news",
                        "name": "go-news",
                        "attach_session": True,
                    },
                )
            ]
        ),
        ToolCalls([("cronjob", {"action": "create", "schedule": "whenever", "prompt": "x"})]),
        ToolCalls([("cronjob", {"action": "list"})]),
        Text("Done: go-news runs on weekdays at 09:00."),
    )
    result = await runtime.agent.run_turn(
        TurnRequest(
            "Every weekday morning, summarise Go news.",
            session_id="chat-7",
            scope="user:alice",
            source="api",
        )
    )
    assert result.content.startswith("Done")
    alice = scope_root(settings.home, "user:alice")
    [job] = read_jobs(settings.home, alice)
    assert job["schedule"]["expr"] == "0 9 * * 1-5" and job["session_id"] == "chat-7"
    assert job["origin"] == {"platform": "api", "session_id": "chat-7"}
    assert not (settings.home / "cron" / "jobs.json").exists()  # not in the owner's scope
    last = fake.chat_requests()[-1]
    created, refused, listed = _tool_results(last)
    assert json.loads(created)["job"]["id"] == job["id"]
    assert refused.startswith("Error: schedule: cannot understand") and "every 30m" in refused
    assert [j["name"] for j in json.loads(listed)["jobs"]] == ["go-news"]


async def test_run_action_without_a_server_runs_inline(
    runtime: Runtime, fake: FakeModel, settings: Settings
) -> None:
    store = JobStore(settings.home, "default", UTC)
    job = create_job(store, schedule="every 1h", prompt="ping", name="pinger")
    fake.enqueue(Text("pong"), when=_is_cron_run)
    fake.enqueue(
        ToolCalls([("cronjob", {"action": "run", "job_id": "pinger"})]), Text("It answered pong.")
    )
    await runtime.agent.run_turn(TurnRequest("run pinger now", session_id="s"))
    run_result = json.loads(_tool_results(fake.chat_requests()[-1])[0])
    assert run_result["status"] == "ok" and run_result["response"] == "pong"
    assert len(outputs(settings.home, job["id"])) == 1
    cron_request = next(b for b in fake.chat_requests() if _is_cron_run(b))
    assert "cronjob" not in {t["function"]["name"] for t in cron_request.get("tools") or []}
    fake.assert_complete()


# ---------------------------------------------------------------------- CLI


def test_cli_add_list_edit_pause_resume_remove(home: Path) -> None:
    added = run_cli("cron", "add", "0 9 * * 1-5", "Write my standup", "--name", "standup")
    assert added.returncode == 0, added.stderr
    job_id = added.stdout.split()[1]
    listing = run_cli("cron", "list")
    assert (
        job_id in listing.stdout and "standup" in listing.stdout and "scheduled" in listing.stdout
    )
    [record] = json.loads(run_cli("cron", "list", "--json").stdout)
    assert record["id"] == job_id and record["deliver"] == "local"
    edited = run_cli("cron", "edit", "STANDUP", "--schedule", "every 2h", "--repeat", "3")
    assert edited.returncode == 0, edited.stderr
    [record] = read_jobs(home)
    assert record["schedule"]["minutes"] == 120 and record["repeat"]["times"] == 3
    assert run_cli("cron", "pause", job_id).returncode == 0
    assert read_jobs(home)[0]["state"] == "paused"
    assert run_cli("cron", "resume", job_id).returncode == 0
    assert read_jobs(home)[0]["state"] == "scheduled"
    assert run_cli("cron", "remove", job_id).returncode == 0
    assert read_jobs(home) == []


def test_cli_errors_are_one_line_and_non_zero(home: Path) -> None:
    bad = run_cli("cron", "add", "every fortnight", "x")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert (
        bad.stderr.startswith("hermes: schedule: cannot understand") and "every 30m" in bad.stderr
    )
    missing = run_cli("cron", "pause", "nope")
    assert missing.returncode == 1 and "no job 'nope'" in missing.stderr
    nothing = run_cli("cron", "edit", "nope")
    assert nothing.returncode == 2 and "nothing to change" in nothing.stderr
    (home / "cron").mkdir(parents=True, exist_ok=True)
    (home / "cron" / "jobs.json").write_text("{broken")
    corrupt = run_cli("cron", "list")
    assert corrupt.returncode == 1 and "not a valid jobs file" in corrupt.stderr
    assert (home / "cron" / "jobs.json").read_text() == "{broken"


def test_cli_user_scopes_are_separate(home: Path) -> None:
    assert run_cli("cron", "add", "every 1h", "for alice", "--user", "alice").returncode == 0
    assert json.loads(run_cli("cron", "list", "--json").stdout) == []
    [job] = json.loads(run_cli("cron", "list", "--json", "--user", "alice").stdout)
    assert job["prompt"] == "for alice"
    assert run_cli("cron", "list", "--user", "bad id!").returncode == 2


def test_cli_run_prints_the_answer_and_saves_it(
    model_env: dict, fake: FakeModel, home: Path
) -> None:
    fake.default = Text("All systems nominal.")
    job_id = run_cli("cron", "add", "every 1h", "Status?", "--name", "status").stdout.split()[1]
    result = run_cli("cron", "run", "status")
    assert result.returncode == 0, result.stderr
    assert "All systems nominal." in result.stdout
    [doc] = outputs(home, job_id)
    assert str(doc) in result.stdout and "All systems nominal." in doc.read_text()
    assert run_cli("cron", "tick").stdout.strip() == "no jobs were due"


def test_cli_json_output_for_scripts(model_env: dict, fake: FakeModel, home: Path) -> None:
    """SPEC §2: machine-readable output where a script would want it: the new job's id, a
    run's result, a tick's runs."""
    fake.default = Text("All systems nominal.")
    added = run_cli("cron", "add", "every 1h", "Status?", "--name", "status", "--json")
    assert added.returncode == 0, added.stderr
    body = json.loads(added.stdout)
    assert body["created"] is True and len(body["job"]["id"]) == 12
    again = json.loads(
        run_cli("cron", "add", "every 1h", "Status?", "--name", "status", "--json").stdout
    )
    assert again == {"job": again["job"], "created": False}
    assert again["job"]["id"] == body["job"]["id"]

    ran = run_cli("cron", "run", body["job"]["id"], "--json")
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["status"] == "ok" and result["response"] == "All systems nominal."
    assert result["session_id"].startswith(f"cron_{body['job']['id']}_")
    [doc] = outputs(home, body["job"]["id"])
    assert result["output_path"] == str(doc)

    ticked = run_cli("cron", "tick", "--json")
    assert ticked.returncode == 0 and json.loads(ticked.stdout) == {"runs": [], "skipped": []}


def test_cli_run_json_of_a_failing_job_exits_non_zero(
    model_env: dict, fake: FakeModel, home: Path
) -> None:
    fake.default = Error(400, "boom")
    run_cli("cron", "add", "every 1h", "Status?", "--name", "status")
    ran = run_cli("cron", "run", "status", "--json")
    assert ran.returncode == 1
    result = json.loads(ran.stdout)
    assert result["status"] == "error" and result["error"]


def test_cli_run_of_a_failing_job_exits_non_zero(
    model_env: dict, fake: FakeModel, home: Path
) -> None:
    fake.default = Error(400, "boom")
    run_cli("cron", "add", "every 1h", "Status?", "--name", "status")
    result = run_cli("cron", "run", "status")
    assert result.returncode == 1 and "failed" in result.stderr
    assert read_jobs(home)[0]["last_status"] == "error"


def test_cli_add_twice_reports_the_job_is_there_and_refuses_a_taken_name(
    settings: Settings,
) -> None:
    args = ("cron", "add", "0 9 * * 1-5", "Write my standup.", "--name", "daily-standup")
    first = run_cli(*args)
    again = run_cli(*args)
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    [job] = read_jobs(settings.home)
    assert again.stdout.startswith(f"already there: {job['id']} (daily-standup)")
    clash = run_cli("cron", "add", "0 10 * * 1-5", "Write my standup.", "--name", "Daily-Standup")
    assert clash.returncode == 1 and "Traceback" not in clash.stderr
    assert job["id"] in clash.stderr and "different schedule" in clash.stderr
    assert "hermes cron edit" in clash.stderr
    assert len(read_jobs(settings.home)) == 1
    assert run_cli("cron", "edit", "daily-standup", "--prompt", "Standup, short.").returncode == 0


async def test_the_tool_returns_an_existing_job_and_refuses_a_taken_name(
    runtime: Runtime, fake: FakeModel, settings: Settings
) -> None:
    create = {"action": "create", "schedule": "every 1h", "prompt": "ping", "name": "pinger"}
    fake.enqueue(
        ToolCalls([("cronjob", create)]),
        ToolCalls([("cronjob", create)]),
        ToolCalls([("cronjob", {**create, "schedule": "every 2h"})]),
        Text("done"),
    )
    await runtime.agent.run_turn(TurnRequest("ping me hourly", session_id="t1", source="api"))
    [job] = read_jobs(settings.home)
    created, again, clash = _tool_results(fake.chat_requests()[-1])
    assert json.loads(created)["created"] is True
    assert json.loads(again) == {**json.loads(created), "created": False, "already_existed": True}
    assert clash.startswith("Error: a job named 'pinger' already exists") and job["id"] in clash
