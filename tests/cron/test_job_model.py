"""A cron job's own model (`model`, `base_url`, `fallbacks`): runs use it, fall back through
its fallbacks and then the configured chain, and the transcript names the model that answered."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from hermes.agent.turn import TurnRequest
from hermes.config.settings import Settings
from hermes.runtime import Runtime, build_runtime
from hermes.server.app import create_app
from hermes.testing.fake_model import Error, FakeModel, Text, ToolCalls
from tests.conftest import run_cli
from tests.cron.conftest import read_jobs

KEY = "hermes"
AUTH = {"Authorization": f"Bearer {KEY}"}
JOB = {"name": "digest", "schedule": "every 1h", "prompt": "Summarise the news."}


@pytest.fixture
def backup() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    settings.server.api_key = SecretStr(KEY)
    runtime = build_runtime(settings)
    app = create_app(runtime)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hermes") as http:
            yield http


async def create(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    r = await client.post("/api/jobs", headers=AUTH, json={**JOB, **fields})
    assert r.status_code == 201, r.text
    job: dict[str, Any] = r.json()["job"]
    return job


async def run_and_wait(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    """Run the job now; the finished job record."""
    assert (await client.post(f"/api/jobs/{job_id}/run", headers=AUTH)).status_code == 200
    deadline = time.monotonic() + 15
    while True:
        job: dict[str, Any] = (await client.get(f"/api/jobs/{job_id}", headers=AUTH)).json()["job"]
        if job.get("last_status"):
            return job
        assert time.monotonic() < deadline, "the run did not finish"
        await asyncio.sleep(0.02)


async def transcript(client: httpx.AsyncClient, job_id: str) -> list[dict[str, Any]]:
    """The messages of the job's (only) run session, through the sessions API."""
    listed = (await client.get("/api/sessions", headers=AUTH)).json()
    ids = [s["id"] for s in listed["sessions"] if s["id"].startswith(f"cron_{job_id}_")]
    assert len(ids) == 1, listed
    r = await client.get(f"/api/sessions/{ids[0]}/messages", headers=AUTH)
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


async def test_a_job_naming_a_model_runs_on_it(client: httpx.AsyncClient, fake: FakeModel) -> None:
    fake.enqueue(Text("the digest"))
    job = await create(client, model="digest-model")
    assert (job["model"], job["base_url"], job["fallbacks"]) == ("digest-model", None, [])
    done = await run_and_wait(client, job["id"])
    assert done["last_status"] == "ok", done
    assert [r["model"] for r in fake.chat_requests()] == ["digest-model"]
    answers = [m for m in await transcript(client, job["id"]) if m["role"] == "assistant"]
    assert [(m["content"], m["model"]) for m in answers] == [("the digest", "digest-model")]
    user = [m for m in await transcript(client, job["id"]) if m["role"] == "user"]
    assert "model" not in user[0]


async def test_a_failing_job_model_switches_to_its_fallback(
    client: httpx.AsyncClient, fake: FakeModel, backup: FakeModel
) -> None:
    fake.enqueue(Error(503, "overloaded"))
    backup.enqueue(Text("from the backup"))
    job = await create(
        client,
        model="digest-model",
        fallbacks=[{"name": "backup-model", "base_url": backup.base_url}],
    )
    done = await run_and_wait(client, job["id"])
    assert done["last_status"] == "ok", done
    assert [r["model"] for r in fake.chat_requests()] == ["digest-model"]
    assert [r["model"] for r in backup.chat_requests()] == ["backup-model"]
    answers = [m for m in await transcript(client, job["id"]) if m["role"] == "assistant"]
    assert [(m["content"], m["model"]) for m in answers] == [("from the backup", "backup-model")]


async def test_past_its_own_models_a_job_falls_back_to_the_configured_one(
    client: httpx.AsyncClient, fake: FakeModel, backup: FakeModel
) -> None:
    backup.enqueue(Error(503, "down"))
    fake.enqueue(Text("configured model answered"))
    job = await create(client, model="elsewhere", base_url=backup.base_url)
    done = await run_and_wait(client, job["id"])
    assert done["last_status"] == "ok", done
    assert [r["model"] for r in backup.chat_requests()] == ["elsewhere"]
    assert [r["model"] for r in fake.chat_requests()] == ["fake-model"]
    answers = [m for m in await transcript(client, job["id"]) if m["role"] == "assistant"]
    assert [m["model"] for m in answers] == ["fake-model"]


async def test_the_model_is_part_of_the_job_definition(client: httpx.AsyncClient) -> None:
    job = await create(client, model="digest-model")
    again = await client.post("/api/jobs", headers=AUTH, json={**JOB, "model": "digest-model"})
    assert again.status_code == 200 and again.json()["job"]["id"] == job["id"]
    other = await client.post("/api/jobs", headers=AUTH, json={**JOB, "model": "other-model"})
    assert other.status_code == 409, other.text
    assert other.json()["error"]["code"] == "job_exists"
    assert "model" in other.json()["error"]["message"]
    unpinned = await client.post("/api/jobs", headers=AUTH, json=JOB)
    assert unpinned.status_code == 409
    patched = await client.patch(
        f"/api/jobs/{job['id']}",
        headers=AUTH,
        json={"fallbacks": [{"name": "spare"}], "base_url": "http://127.0.0.1:9/v1"},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["job"]["fallbacks"] == [{"name": "spare"}]
    assert patched.json()["job"]["base_url"] == "http://127.0.0.1:9/v1"
    cleared = await client.patch(f"/api/jobs/{job['id']}", headers=AUTH, json={"model": None})
    assert cleared.status_code == 200, cleared.text
    assert [cleared.json()["job"][k] for k in ("model", "base_url", "fallbacks")] == [
        None,
        None,
        [],
    ]
    orphan = await client.patch(
        f"/api/jobs/{job['id']}", headers=AUTH, json={"fallbacks": [{"name": "spare"}]}
    )
    assert orphan.status_code == 400 and orphan.json()["error"]["param"] == "model"
    assert (await client.get(f"/api/jobs/{job['id']}", headers=AUTH)).json()["job"][
        "fallbacks"
    ] == []


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"model": "two words"}, "model"),
        ({"model": 42}, "model"),
        ({"model": "m", "base_url": "ftp://example.com"}, "base_url"),
        ({"base_url": "http://127.0.0.1:9/v1"}, "model"),
        ({"fallbacks": [{"name": "spare"}]}, "model"),
        ({"model": "m", "fallbacks": "spare"}, "fallbacks"),
        ({"model": "m", "fallbacks": [{"base_url": "http://127.0.0.1:9/v1"}]}, "fallbacks"),
        ({"model": "m", "fallbacks": [{"name": "spare", "api_key": "sk-secret"}]}, "fallbacks"),
        ({"model": "m", "fallbacks": [{"name": "spare", "provider": "x"}]}, "fallbacks"),
    ],
)
async def test_bad_model_fields_are_clear_400s(
    client: httpx.AsyncClient, fields: dict[str, Any], param: str
) -> None:
    r = await client.post("/api/jobs", headers=AUTH, json={**JOB, **fields})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param
    assert "sk-secret" not in r.text
    assert (await client.get("/api/jobs", headers=AUTH)).json() == {"jobs": []}


def test_cli_add_and_edit_take_a_model(settings: Settings) -> None:
    r = run_cli(
        "cron",
        "add",
        "every 1h",
        "Summarise the news.",
        "--name",
        "digest",
        "--model",
        "digest-model",
        "--fallback",
        "spare",
        "--fallback",
        "far=http://127.0.0.1:9/v1",
    )
    assert r.returncode == 0, r.stderr
    [job] = read_jobs(settings.home)
    assert job["model"] == "digest-model"
    assert job["fallbacks"] == [
        {"name": "spare"},
        {"name": "far", "base_url": "http://127.0.0.1:9/v1"},
    ]
    bad = run_cli("cron", "add", "every 1h", "x", "--fallback", "spare")
    assert bad.returncode == 2 and "model" in bad.stderr and "Traceback" not in bad.stderr
    r = run_cli("cron", "edit", "digest", "--model", "")
    assert r.returncode == 0, r.stderr
    [job] = read_jobs(settings.home)
    assert (job["model"], job["base_url"], job["fallbacks"]) == (None, None, [])
    listed = json.loads(run_cli("cron", "list", "--json").stdout)
    assert listed[0]["model"] is None


async def test_the_cronjob_tool_can_name_a_model(
    runtime: Runtime, fake: FakeModel, settings: Settings
) -> None:
    create = {"action": "create", "schedule": "every 1h", "prompt": "Check the build."}
    fake.enqueue(
        ToolCalls([("cronjob", {**create, "name": "build", "model": "small-model"})]),
        ToolCalls([("cronjob", {**create, "name": "bad", "model": "two words"})]),
        Text("Scheduled."),
    )
    await runtime.agent.run_turn(TurnRequest("Check the build hourly.", session_id="t-1"))
    [job] = read_jobs(settings.home)
    assert (job["name"], job["model"]) == ("build", "small-model")
    results = [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    assert json.loads(results[0])["job"]["model"] == "small-model"
    assert results[1].startswith("Error: model:")
