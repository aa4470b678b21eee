"""/api/jobs over HTTP: SPEC §6 shapes, 400s naming the field, scope isolation, manual runs."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from hermes.config.settings import Settings
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from hermes.testing.fake_model import FakeModel, Text
from tests.conftest import run_cli
from tests.cron.conftest import Webhook, outputs

KEY = "hermes"
AUTH = {"Authorization": f"Bearer {KEY}"}
ALICE = {**AUTH, "X-Hermes-User-Id": "alice"}
BOB = {**AUTH, "X-Hermes-User-Id": "bob"}
STANDUP = {"name": "daily-standup", "schedule": "0 9 * * 1-5", "prompt": "Write my standup."}


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    settings.server.api_key = SecretStr(KEY)
    runtime = build_runtime(settings)
    app = create_app(runtime)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hermes") as http:
            yield http


async def wait_for_output(root: Path, job_id: str) -> Path:
    deadline = time.monotonic() + 15
    while not outputs(root, job_id):
        assert time.monotonic() < deadline, "no output file appeared"
        await asyncio.sleep(0.02)
    return outputs(root, job_id)[0]


async def test_create_list_get_patch_pause_resume_delete(client: httpx.AsyncClient) -> None:
    created = await client.post("/api/jobs", headers=AUTH, json=STANDUP)
    assert created.status_code == 201
    job = created.json()["job"]
    assert len(job["id"]) == 12 and job["deliver"] == "local"
    assert job["schedule"] == {"kind": "cron", "expr": "0 9 * * 1-5", "display": "0 9 * * 1-5"}
    listed = (await client.get("/api/jobs", headers=AUTH)).json()
    assert [j["id"] for j in listed["jobs"]] == [job["id"]]
    got = await client.get(f"/api/jobs/{job['id']}", headers=AUTH)
    assert got.json()["job"]["name"] == "daily-standup"
    patched = await client.patch(
        f"/api/jobs/{job['id']}", headers=AUTH, json={"schedule": "every 2h", "repeat": 3}
    )
    assert patched.status_code == 200
    assert patched.json()["job"]["schedule"]["kind"] == "interval"
    assert patched.json()["job"]["repeat"] == {"times": 3, "completed": 0}
    paused = await client.post(f"/api/jobs/{job['id']}/pause", headers=AUTH)
    assert paused.json()["job"]["state"] == "paused"
    resumed = await client.post(f"/api/jobs/{job['id']}/resume", headers=AUTH)
    assert resumed.json()["job"]["state"] == "scheduled"
    deleted = await client.delete(f"/api/jobs/{job['id']}", headers=AUTH)
    assert deleted.status_code == 200 and deleted.json()["ok"] is True
    assert (await client.get(f"/api/jobs/{job['id']}", headers=AUTH)).status_code == 404
    assert (await client.get("/api/jobs", headers=AUTH)).json() == {"jobs": []}


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"schedule": "every 1h", "prompt": "x"}, "name"),
        ({"name": "x", "prompt": "x"}, "schedule"),
        ({**STANDUP, "schedule": "sometimes"}, "schedule"),
        ({**STANDUP, "name": "n" * 201}, "name"),
        ({**STANDUP, "prompt": "p" * 5001}, "prompt"),
        ({**STANDUP, "prompt": ""}, "prompt"),
        ({**STANDUP, "deliver": "pigeon"}, "deliver"),
        ({**STANDUP, "repeat": 0}, "repeat"),
        ({**STANDUP, "skills": "not-a-list!"}, "skills"),
        ({**STANDUP, "session_id": "no spaces allowed"}, "session_id"),
        ({**STANDUP, "colour": "blue"}, "colour"),
    ],
)
async def test_bad_create_is_a_400_naming_the_field(
    client: httpx.AsyncClient, body: dict, param: str
) -> None:
    response = await client.post("/api/jobs", headers=AUTH, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and error["message"] and error["type"] == "invalid_request_error"
    assert (await client.get("/api/jobs", headers=AUTH)).json() == {"jobs": []}


async def test_bad_schedule_message_lists_the_accepted_forms(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/jobs", headers=AUTH, json={**STANDUP, "schedule": "often"})
    assert "every 30m" in response.json()["error"]["message"]


async def test_bad_patch_and_bad_ids(client: httpx.AsyncClient) -> None:
    job = (await client.post("/api/jobs", headers=AUTH, json=STANDUP)).json()["job"]
    for body, param in (
        ({"schedule": "nope"}, "schedule"),
        ({"id": "x"}, "id"),
        ({}, "body"),
        ({"enabled": "yes"}, "enabled"),
    ):
        response = await client.patch(f"/api/jobs/{job['id']}", headers=AUTH, json=body)
        assert response.status_code == 400 and response.json()["error"]["param"] == param
    bad = await client.get("/api/jobs/..%2Fetc", headers=AUTH)
    assert bad.status_code in (400, 404)
    assert (await client.get("/api/jobs/not*an*id", headers=AUTH)).status_code == 400
    assert (await client.post("/api/jobs/0123456789ab/run", headers=AUTH)).status_code == 404
    unchanged = (await client.get(f"/api/jobs/{job['id']}", headers=AUTH)).json()["job"]
    assert unchanged == job


async def test_auth_is_required(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/jobs")).status_code == 401
    wrong = await client.get("/api/jobs", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401


async def test_jobs_are_isolated_by_scope(client: httpx.AsyncClient) -> None:
    mine = (await client.post("/api/jobs", headers=ALICE, json=STANDUP)).json()["job"]
    assert (await client.get("/api/jobs", headers=BOB)).json() == {"jobs": []}
    assert (await client.get("/api/jobs", headers=AUTH)).json() == {"jobs": []}
    for method, suffix in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/pause"),
        ("POST", "/resume"),
        ("POST", "/run"),
        ("GET", "/runs"),
    ):
        kwargs = {"json": {"name": "stolen"}} if method == "PATCH" else {}
        response = await client.request(
            method, f"/api/jobs/{mine['id']}{suffix}", headers=BOB, **kwargs
        )
        assert response.status_code == 404, (method, suffix)
    listed = (await client.get("/api/jobs", headers=ALICE)).json()["jobs"]
    assert [j["name"] for j in listed] == ["daily-standup"] and listed[0]["state"] == "scheduled"


async def test_manual_run_over_http_writes_the_answer(
    client: httpx.AsyncClient, fake: FakeModel, settings: Settings
) -> None:
    fake.default = Text("Yesterday: API. Today: cron.")
    job = (
        await client.post(
            "/api/jobs",
            headers=AUTH,
            json=STANDUP,
        )
    ).json()["job"]
    started = await client.post(f"/api/jobs/{job['id']}/run", headers=AUTH)
    assert started.status_code == 200 and started.json()["job"]["id"] == job["id"]
    doc = await wait_for_output(settings.home, job["id"])
    assert "Yesterday: API. Today: cron." in doc.read_text()
    deadline = time.monotonic() + 10
    while True:
        current = (await client.get(f"/api/jobs/{job['id']}", headers=AUTH)).json()["job"]
        if current.get("last_status"):
            break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    assert current["last_status"] == "ok" and current["next_run_at"] == job["next_run_at"]
    runs = (await client.get(f"/api/jobs/{job['id']}/runs", headers=AUTH)).json()["runs"]
    assert len(runs) == 1 and "Today: cron." in runs[0]["content"] and runs[0]["status"] == "ok"


async def test_session_header_on_create_links_the_session(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/jobs", json=STANDUP, headers={**AUTH, "X-Hermes-Session-Id": "repo:acme/app"}
    )
    assert response.json()["job"]["session_id"] == "repo:acme/app"


# ---------------------------------------------------------------------- the seed tutorial


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_seed_tutorial_job_over_a_real_server(
    model_env: dict, settings: Settings, fake: FakeModel
) -> None:
    """SPEC §1: create the standup job with Bearer hermes, list it with the CLI, run it."""
    fake.default = Text("Standup: shipped cron.")
    port = _free_port()
    env = {**os.environ, "HERMES_API_KEY": KEY, "HERMES_PORT": str(port)}
    server = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        created = httpx.post(f"{base}/api/jobs", headers=AUTH, json=STANDUP, timeout=10)
        assert created.status_code == 201, created.text
        job = created.json()["job"]
        listing = run_cli("cron", "list")
        assert listing.returncode == 0 and job["id"] in listing.stdout
        assert "daily-standup" in listing.stdout
        as_json = json.loads(run_cli("cron", "list", "--json").stdout)
        assert as_json[0]["schedule"]["expr"] == "0 9 * * 1-5"
        assert (
            httpx.post(f"{base}/api/jobs/{job['id']}/run", headers=AUTH, timeout=10).status_code
            == 200
        )
        deadline = time.monotonic() + 20
        while not outputs(settings.home, job["id"]):
            assert time.monotonic() < deadline, "the run wrote no output"
            time.sleep(0.05)
        assert "Standup: shipped cron." in outputs(settings.home, job["id"])[0].read_text()
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert server.returncode == 0


async def test_metrics_count_cron_runs_and_their_deliveries(
    client: httpx.AsyncClient, fake: FakeModel, settings: Settings, webhook: Webhook
) -> None:
    fake.default = Text("Standup: all good.")
    job = (
        await client.post("/api/jobs", headers=AUTH, json={**STANDUP, "deliver": webhook.url})
    ).json()["job"]
    assert (await client.post(f"/api/jobs/{job['id']}/run", headers=AUTH)).status_code == 200
    deadline = time.monotonic() + 10
    while (
        not (await client.get(f"/api/jobs/{job['id']}", headers=AUTH))
        .json()["job"]
        .get("last_status")
    ):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    text = (await client.get("/metrics", headers=AUTH)).text
    assert 'hermes_cron_runs_total{outcome="ok"} 1.0' in text
    assert 'hermes_cron_runs_total{outcome="error"} 0.0' in text
    assert 'hermes_cron_deliveries_total{outcome="delivered",target="webhook"} 1.0' in text
    assert "hermes_cron_late_runs_total 0.0" in text
    assert "hermes_compressions_total 0.0" in text


async def test_posting_the_same_job_twice_returns_the_first(client: httpx.AsyncClient) -> None:
    first = await client.post("/api/jobs", headers=AUTH, json=STANDUP)
    again = await client.post("/api/jobs", headers=AUTH, json=STANDUP)
    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["job"]["id"] == first.json()["job"]["id"]
    assert len((await client.get("/api/jobs", headers=AUTH)).json()["jobs"]) == 1
    # another scope has names of its own
    assert (await client.post("/api/jobs", headers=ALICE, json=STANDUP)).status_code == 201


async def test_a_taken_name_with_another_definition_is_a_409(client: httpx.AsyncClient) -> None:
    job = (await client.post("/api/jobs", headers=AUTH, json=STANDUP)).json()["job"]
    other = await client.post(
        "/api/jobs", headers=AUTH, json={**STANDUP, "schedule": "0 10 * * 1-5"}
    )
    assert other.status_code == 409
    error = other.json()["error"]
    assert error["code"] == "job_exists" and error["param"] == "name"
    assert job["id"] in error["message"] and "schedule" in error["message"]
    listed = (await client.get("/api/jobs", headers=AUTH)).json()["jobs"]
    assert [j["id"] for j in listed] == [job["id"]]
    assert listed[0]["schedule"]["expr"] == "0 9 * * 1-5"


@pytest.mark.parametrize("schedule", ["whenever", "every 0m", "61 9 * * *", "in 99999d"])
async def test_schedule_errors_end_in_one_full_stop(
    client: httpx.AsyncClient, schedule: str
) -> None:
    r = await client.post("/api/jobs", headers=AUTH, json={**STANDUP, "schedule": schedule})
    assert r.status_code == 400
    message = r.json()["error"]["message"]
    assert message.endswith(".") and ".." not in message, message
