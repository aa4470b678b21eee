"""Two apps (two replicas: own homes, own store handles) on one PostgreSQL: what one stores,
counts or is asked, the other sees — responses, quotas, cron runs, approvals, stop and steer
of a run, sign-outs — and a run whose replica died is failed, not left running."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from hermes.config.settings import Settings, load_settings
from hermes.server.runs_remote import COMMAND, POLL_SECONDS, lease_name
from hermes.store.base import RunEvent, RunRecord
from hermes.store.leases import new_holder
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

from .conftest import Api, open_api, sse_events
from .test_basics import assert_envelope
from .test_runs import FINAL, start, status_of, wait_status

KEY = "two-replicas-server-key-012345"
AUTH = {"Authorization": f"Bearer {KEY}"}
CONFIG = "memory:\n  review_interval: 0\ncron:\n  tick_seconds: 0.2\n"


def _settings(home: Path, env: dict[str, str]) -> Settings:
    settings = load_settings(home, env)
    settings.server.api_key = SecretStr(KEY)
    settings.model.max_retries = 0
    return settings


@pytest.fixture
def homes(tmp_path: Path) -> list[Path]:
    made = []
    for name in ("a", "b"):
        home = tmp_path / f"replica-{name}"
        home.mkdir()
        (home / "config.yaml").write_text(CONFIG, encoding="utf-8")
        made.append(home)
    return made


@pytest.fixture
async def pair(
    pg_url: str, model_env: dict[str, str], homes: list[Path], tmp_path: Path
) -> AsyncIterator[tuple[Api, Api]]:
    env = {**model_env, "HERMES_DATABASE_URL": pg_url, "HERMES_WORKDIR": str(tmp_path)}
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(open_api(_settings(homes[0], env)))
        b = await stack.enter_async_context(open_api(_settings(homes[1], env)))
        yield a, b


def _echo(body: dict[str, Any]) -> Any:
    if body["messages"][-1]["role"] == "tool":
        return Text("done")
    said = str([m for m in body["messages"] if m["role"] == "user"][-1]["content"])
    if said.startswith("danger"):
        return ToolCalls([("terminal", {"command": "rm -rf junk"})])
    return Text(f"ok: {said}")


async def test_a_response_stored_on_one_replica_continues_on_the_other(
    pair: tuple[Api, Api], fake: FakeModel
) -> None:
    a, b = pair
    fake.default = _echo
    first = await a.client.post(
        "/v1/responses", json={"model": "hermes", "input": "My name is Ada."}, headers=AUTH
    )
    assert first.status_code == 200, first.text
    rid = first.json()["id"]
    assert (await b.client.get(f"/v1/responses/{rid}", headers=AUTH)).json()["id"] == rid
    second = await b.client.post(
        "/v1/responses",
        json={"model": "hermes", "input": "What is my name?", "previous_response_id": rid},
        headers=AUTH,
    )
    assert second.status_code == 200, second.text
    seen = [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "user"]
    assert seen == ["My name is Ada.", "What is my name?"]


async def test_a_keys_quota_holds_across_replicas(pair: tuple[Api, Api], fake: FakeModel) -> None:
    a, b = pair
    fake.default = _echo
    for api in pair:
        api.runtime.settings.quotas.turns_per_day = 3
    made = await a.client.post("/api/keys", json={"user": "carol"}, headers=AUTH)
    carol = {"Authorization": f"Bearer {made.json()['secret']}"}
    codes = [
        (await api.chat(f"turn {i}", headers=carol)).status_code
        for i, api in enumerate([a, b, a, b])
    ]
    assert codes == [200, 200, 200, 429]


async def test_cron_runs_are_the_same_on_every_replica(
    pair: tuple[Api, Api], fake: FakeModel
) -> None:
    a, b = pair
    fake.default = _echo
    made = await a.client.post(
        "/api/jobs",
        json={"name": "standup", "schedule": "every 1h", "prompt": "cron hello"},
        headers=AUTH,
    )
    job_id = made.json()["job"]["id"]
    assert (await a.client.post(f"/api/jobs/{job_id}/run", headers=AUTH)).status_code < 300
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while not (await b.client.get(f"/api/jobs/{job_id}/runs", headers=AUTH)).json()["runs"]:
        assert loop.time() < deadline, "the run never showed on the other replica"
        await asyncio.sleep(0.05)
    here = (await a.client.get(f"/api/jobs/{job_id}/runs", headers=AUTH)).json()["runs"]
    there = (await b.client.get(f"/api/jobs/{job_id}/runs", headers=AUTH)).json()["runs"]
    assert here == there and len(there) == 1
    assert "cron hello" in there[0]["content"] and there[0]["created_at"]


async def test_an_approval_answered_on_the_other_replica_reaches_the_run(
    pair: tuple[Api, Api], fake: FakeModel
) -> None:
    a, b = pair
    fake.default = _echo
    run_id = await start(a, headers=AUTH, input="danger now")
    await wait_status(b, run_id, {"waiting_for_approval"}, headers=AUTH)
    answer = await b.client.post(
        f"/v1/runs/{run_id}/approval", json={"choice": "deny"}, headers=AUTH
    )
    assert answer.status_code == 200 and answer.json()["resolved"] == 1, answer.text
    done = await wait_status(a, run_id, FINAL, headers=AUTH)
    assert done["status"] == "completed"
    assert any("Denied" in str(m["content"]) for m in fake.chat_requests()[-1]["messages"])


async def test_a_run_is_stopped_from_the_other_replica(
    pair: tuple[Api, Api], fake: FakeModel
) -> None:
    a, b = pair
    fake.default = _echo
    run_id = await start(a, headers=AUTH, input="danger now")
    await wait_status(b, run_id, {"waiting_for_approval"}, headers=AUTH)
    stopped = await b.client.post(f"/v1/runs/{run_id}/stop", headers=AUTH)
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "cancelled"
    assert (await status_of(a, run_id, AUTH))["status"] == "cancelled"
    again = await b.client.post(f"/v1/runs/{run_id}/stop", headers=AUTH)
    assert again.status_code == 200 and again.json()["status"] == "cancelled"
    late = await b.client.post(f"/v1/runs/{run_id}/steer", json={"text": "x"}, headers=AUTH)
    assert_envelope(late, 409, "run_not_active")
    events = await b.client.get(f"/v1/runs/{run_id}/events", headers=AUTH)
    seen = [json.loads(data)["event"] for _, data in sse_events(events.text)]
    assert seen[-1] == "run.cancelled" and seen.count("run.cancelled") == 1
    assert len(fake.chat_requests()) == 1  # the denied-by-nobody tool call never ran on


async def test_a_run_is_steered_from_the_other_replica_in_order(
    pair: tuple[Api, Api], fake: FakeModel
) -> None:
    a, b = pair
    fake.default = _echo
    run_id = await start(a, headers=AUTH, input="danger now")
    await wait_status(b, run_id, {"waiting_for_approval"}, headers=AUTH)
    for text in ("first steer", "second steer"):
        r = await b.client.post(f"/v1/runs/{run_id}/steer", json={"text": text}, headers=AUTH)
        assert r.status_code == 200, r.text
        assert r.json() == {
            "object": "hermes.run.steer_response",
            "run_id": run_id,
            "accepted": True,
        }
    records = a.runtime.store.records
    assert records is not None

    async def taken() -> Any:  # the owner takes the commands at its next poll
        left = await asyncio.to_thread(records.list_records, COMMAND)
        return True if not left else None

    assert await _eventually(taken, within=10 * POLL_SECONDS)
    answer = await b.client.post(
        f"/v1/runs/{run_id}/approval", json={"choice": "deny"}, headers=AUTH
    )
    assert answer.status_code == 200, answer.text
    assert (await wait_status(a, run_id, FINAL, headers=AUTH))["status"] == "completed"
    first, *rest = fake.chat_requests()
    assert "steer" not in json.dumps(first)
    users = [m["content"] for m in rest[0]["messages"] if m["role"] == "user"]
    assert users[-2:] == ["first steer", "second steer"]
    assert await asyncio.to_thread(records.list_records, COMMAND) == []  # none applied twice


async def _dead_run(api: Api, holder: str | None) -> str:
    """A run the store says is running, as a replica left it when it died (its lease, if
    any, held by `holder`)."""
    now = time.time()
    run_id = f"run_{uuid.uuid4().hex}"
    store = api.runtime.store
    if holder is not None:
        assert await asyncio.to_thread(store.acquire_lock, lease_name(run_id), holder, 30.0)
    record = RunRecord(run_id, "default", "running", now, now, None, "hermes")
    started = RunEvent(1, {"event": "run.started", "run_id": run_id, "timestamp": now})
    assert store.runs is not None
    await asyncio.to_thread(store.runs.save_run, record, [started])
    return run_id


async def test_a_run_whose_replica_died_is_failed_not_left_running(
    pair: tuple[Api, Api],
) -> None:
    a, b = pair
    dead_pid = 4_000_000  # above Linux's pid_max: no such process
    dead = f"hermes:{socket.gethostname()}:{dead_pid}:0:deadbeef"
    run_id = await _dead_run(a, dead)
    got = await status_of(b, run_id, AUTH)
    assert got["status"] == "failed" and got["error"]["code"] == "replica_lost"
    stop = await a.client.post(f"/v1/runs/{run_id}/stop", headers=AUTH)
    assert stop.status_code == 200 and stop.json()["status"] == "failed"
    steer = await a.client.post(f"/v1/runs/{run_id}/steer", json={"text": "x"}, headers=AUTH)
    assert_envelope(steer, 409, "run_not_active")
    events = await a.client.get(f"/v1/runs/{run_id}/events", headers=AUTH)
    seen = [json.loads(data) for _, data in sse_events(events.text)]
    assert [e["event"] for e in seen] == ["run.started", "run.failed"]
    assert seen[-1]["error"]["code"] == "replica_lost"

    unleased = await _dead_run(a, None)  # a replica that died before taking the lease
    stop = await b.client.post(f"/v1/runs/{unleased}/stop", headers=AUTH)
    assert stop.status_code == 200 and stop.json()["error"]["code"] == "replica_lost"


async def test_a_run_whose_replica_lives_is_left_alone(pair: tuple[Api, Api]) -> None:
    a, b = pair
    run_id = await _dead_run(a, new_holder())  # held by a live process (this one)
    for api in (a, b):
        assert (await status_of(api, run_id, AUTH))["status"] == "running"


SKILL = """---
name: deploy-staging
description: Deploy the staging stack
---
1. make deploy ENV=staging
"""


async def _eventually(check: Any, within: float = 10.0) -> Any:
    """Poll `check()` (async, returns a value or None) until it gives a value."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        found = await check()
        if found is not None or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.1)


async def test_a_skill_the_agent_writes_on_one_replica_is_seen_by_the_other(
    pair: tuple[Api, Api], fake: FakeModel
) -> None:
    a, b = pair
    create = {"action": "create", "name": "deploy-staging", "category": "ops", "content": SKILL}
    script = {
        "action": "write_file",
        "name": "deploy-staging",
        "file_path": "scripts/deploy.sh",
        "file_content": "#!/bin/sh\nmake deploy\n",
    }
    fake.enqueue(
        ToolCalls([("skill_manage", create)]), ToolCalls([("skill_manage", script)]), Text("saved")
    )
    said = await a.client.post(
        "/v1/chat/completions",
        json={"model": "hermes", "messages": [{"role": "user", "content": "save that"}]},
        headers=AUTH,
    )
    assert said.status_code == 200, said.text
    assert "error" not in json.dumps(fake.chat_requests()[-1]["messages"][-1])

    async def on_b() -> Any:
        r = await b.client.get("/api/skills/deploy-staging", headers=AUTH)
        return r.json()["skill"] if r.status_code == 200 else None

    seen = await _eventually(on_b)
    assert seen is not None and seen["content"] == SKILL and seen["category"] == "ops"
    assert seen["files"] == ["scripts/deploy.sh"]
    script_b = b.runtime.settings.home / "skills/ops/deploy-staging/scripts/deploy.sh"
    assert script_b.read_text() == "#!/bin/sh\nmake deploy\n" and script_b.stat().st_mode & 0o100

    edited = SKILL.replace("make deploy", "make deploy-all")
    put = await b.client.put(
        "/api/skills/deploy-staging",
        content=edited,
        headers={**AUTH, "Content-Type": "text/markdown"},
    )
    assert put.status_code == 200, put.text

    async def edited_on_a() -> Any:
        r = await a.client.get("/api/skills/deploy-staging", headers=AUTH)
        return True if r.json()["skill"]["content"] == edited else None

    assert await _eventually(edited_on_a)
    gone = await a.client.delete("/api/skills/deploy-staging", headers=AUTH)
    assert gone.status_code == 200, gone.text

    async def gone_on_b() -> Any:
        r = await b.client.get("/api/skills", headers=AUTH)
        return True if "deploy-staging" not in [s["name"] for s in r.json()["skills"]] else None

    assert await _eventually(gone_on_b)
    assert not (b.runtime.settings.home / "skills/ops").exists()


async def test_signing_out_on_one_replica_ends_the_sign_in_on_the_other(
    pair: tuple[Api, Api],
) -> None:
    a, b = pair
    assert (await a.client.post("/ui/login", json={"key": KEY})).status_code in (200, 303)
    session = await a.client.get("/ui/session")
    b.client.cookies.update(a.client.cookies)
    assert (await b.client.get("/ui/session")).status_code == 200
    out = await a.client.post("/ui/logout", headers={"X-CSRF-Token": session.json()["csrf"]})
    assert out.status_code == 200
    assert (await b.client.get("/ui/session")).status_code == 401
    assert (await b.client.get("/api/jobs")).status_code == 401
