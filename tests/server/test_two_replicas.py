"""Two apps (two replicas: own homes, own store handles) on one PostgreSQL: what one stores,
counts or is asked, the other sees — responses, quotas, cron runs, approvals, sign-outs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from hermes.config.settings import Settings, load_settings
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

from .conftest import Api, open_api
from .test_runs import FINAL, start, wait_status

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
