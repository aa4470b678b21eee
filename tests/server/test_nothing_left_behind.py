"""A replica serving on PostgreSQL keeps nothing of its users under `$HERMES_HOME`.

The app (with its cron ticker and Telegram gateway, pairing on) is driven through every
feature: turns, stored responses, runs with an approval, a cron run, gateway pairing through
the Telegram stand-in, a dashboard sign-in and sign-out, memory writes, scoped keys and
their quotas, a skill the agent writes. Then the home holds config, secrets and logs only; everything else is in
the database, where a second app on the same database (another replica) sees it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from hermes.config.settings import Settings, load_settings
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.standins.telegram_api import TelegramBotAPI

from ..gateway.conftest import OWNER, STRANGER, until
from .conftest import Api, open_api
from .test_runs import FINAL, start, wait_status

KEY = "replica-server-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}
# config, secrets, logs; and what the operator ships to every replica beside config.yaml:
# the personality (SOUL.md) and the skills (files by design, SPEC §3 and §11; a skill the
# agent writes is published to the database and only copied here, see the second replica)
ALLOWED = re.compile(r"^(config\.yaml|\.env|logs/.*|SOUL\.md(\.lock)?|skills/.*)$")
CONFIG = """\
memory:
  review_interval: 0
cron:
  tick_seconds: 0.2
gateway:
  pairing: true
quotas:
  turns_per_day: 3
"""


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else str(content)


def _script(body: dict[str, Any]) -> Any:
    """`danger` → a dangerous terminal command; `remember X` → a memory write; else echo."""
    said = _last_user(body)
    if body["messages"][-1]["role"] == "tool":
        return Text("done")
    if said.startswith("danger"):
        return ToolCalls([("terminal", {"command": "rm -rf junk"})])
    if said.startswith("skill "):
        text = (
            f"---\nname: {said.removeprefix('skill ')}\ndescription: A shared skill\n---\nStep 1.\n"
        )
        return ToolCalls(
            [("skill_manage", {"action": "create", "name": said[6:], "content": text})]
        )
    if said.startswith("remember "):
        fact = said.removeprefix("remember ")
        return ToolCalls([("memory", {"target": "user", "action": "add", "content": fact})])
    return Text(f"ok: {said[:40]}")


@pytest.fixture
def replica_settings(
    pg_url: str,
    tg: TelegramBotAPI,
    model_env: dict[str, str],
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Settings:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    workdir = tmp_path / "work"  # the tools' files are the user's, not the replica's state
    workdir.mkdir()
    for name, value in {
        "HERMES_DATABASE_URL": pg_url,
        "HERMES_WORKDIR": str(workdir),
        "TELEGRAM_BOT_TOKEN": tg.state.token,
        "TELEGRAM_API_BASE": tg.base_url,
        "TELEGRAM_ALLOWED_USERS": str(OWNER),
        "HERMES_GATEWAY_OWNER": f"telegram:{OWNER}",
    }.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    settings.server.api_key = SecretStr(KEY)
    settings.model.max_retries = 0
    return settings


@pytest.fixture
async def tg() -> AsyncIterator[TelegramBotAPI]:
    async with TelegramBotAPI() as api:
        yield api


def _files(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())


async def _turns_and_responses(api: Api) -> None:
    chat = await api.client.post(
        "/v1/chat/completions",
        json={"model": "hermes", "messages": [{"role": "user", "content": "hello"}]},
        headers={**AUTH, "X-Hermes-Session-Id": "replica:1"},
    )
    assert chat.status_code == 200, chat.text
    first = await api.client.post(
        "/v1/responses", json={"model": "hermes", "input": "first"}, headers=AUTH
    )
    assert first.status_code == 200, first.text
    second = await api.client.post(
        "/v1/responses",
        json={"model": "hermes", "input": "second", "previous_response_id": first.json()["id"]},
        headers=AUTH,
    )
    assert second.status_code == 200, second.text


async def _chat(api: Api, text: str) -> None:
    r = await api.client.post(
        "/v1/chat/completions",
        json={"model": "hermes", "messages": [{"role": "user", "content": text}]},
        headers=AUTH,
    )
    assert r.status_code == 200, r.text


async def _run_with_approval(api: Api) -> None:
    run_id = await start(api, headers=AUTH, input="danger please")
    await wait_status(api, run_id, {"waiting_for_approval"}, headers=AUTH)
    answer = await api.client.post(
        f"/v1/runs/{run_id}/approval", json={"choice": "session"}, headers=AUTH
    )
    assert answer.status_code == 200, answer.text
    assert (await wait_status(api, run_id, FINAL, headers=AUTH))["status"] == "completed"


async def _cron_run(api: Api) -> str:
    made = await api.client.post(
        "/api/jobs",
        json={"name": "standup", "schedule": "every 1h", "prompt": "cron hello"},
        headers=AUTH,
    )
    assert made.status_code == 201, made.text
    job_id = str(made.json()["job"]["id"])
    ran = await api.client.post(f"/api/jobs/{job_id}/run", headers=AUTH)
    assert ran.status_code in (200, 202), ran.text

    async def one_run() -> bool:
        runs = await api.client.get(f"/api/jobs/{job_id}/runs", headers=AUTH)
        return bool(runs.json()["runs"])

    await _until_async(one_run, "the cron run's output")
    return job_id


async def _until_async(check: Any, what: str, within: float = 20.0) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def _pairing(api: Api, tg: TelegramBotAPI) -> None:
    await tg.user_says(STRANGER, "hi, who are you?")
    sent = await tg.wait_for_sent(1, within=20)
    code = re.search(r"hermes gateway pair (\w+)", str(sent[-1]["text"]))
    assert code, sent
    ok = await api.client.post(f"/api/gateway/pairing/{code.group(1)}/approve", headers=AUTH)
    assert ok.status_code == 200, ok.text
    await tg.user_says(STRANGER, "now may I?")
    await tg.wait_for_sent(2, within=20)
    await tg.user_says(OWNER, "/new")
    await tg.wait_for_sent(3, within=20)


async def _dashboard(api: Api) -> None:
    login = await api.client.post("/ui/login", json={"key": KEY})
    assert login.status_code in (200, 303), login.text
    session = await api.client.get("/ui/session")
    assert session.status_code == 200, session.text
    out = await api.client.post("/ui/logout", headers={"X-CSRF-Token": session.json()["csrf"]})
    assert out.status_code == 200, out.text
    assert (await api.client.get("/ui/session")).status_code == 401
    api.client.cookies.clear()


async def _memory_keys_and_quotas(api: Api) -> None:
    wrote = await api.client.post(
        "/api/memory",
        json={"action": "add", "target": "memory", "content": "Replicas share one database"},
        headers=AUTH,
    )
    assert wrote.status_code == 200, wrote.text
    made = await api.client.post("/api/keys", json={"user": "bob"}, headers=AUTH)
    assert made.status_code in (200, 201), made.text
    bob = {"Authorization": f"Bearer {made.json()['secret']}"}
    statuses = []
    for text in ("remember Bob likes tea", "one", "two", "three"):
        r = await api.client.post(
            "/v1/chat/completions",
            json={"model": "hermes", "messages": [{"role": "user", "content": text}]},
            headers={**bob, "X-Hermes-Session-Id": "bob-chat"},
        )
        statuses.append(r.status_code)
    assert statuses == [200, 200, 200, 429]


async def test_a_replica_on_postgresql_keeps_only_config_secrets_and_logs_in_its_home(
    replica_settings: Settings, fake: FakeModel, tg: TelegramBotAPI, home: Path
) -> None:
    fake.default = _script
    before = _files(home)
    async with open_api(replica_settings) as api:
        await until(lambda: tg.state.calls.count("getUpdates") > 0, what="the gateway polls")
        await _turns_and_responses(api)
        await _run_with_approval(api)
        job_id = await _cron_run(api)
        await _pairing(api, tg)
        await _dashboard(api)
        await _memory_keys_and_quotas(api)
        await _chat(api, "skill shared-steps")
        history = await api.client.get("/api/memory/history", headers=AUTH)
        assert history.json()["versions"], history.text
        runs_here = (await api.client.get(f"/api/jobs/{job_id}/runs", headers=AUTH)).json()
    left = [f for f in _files(home) if not ALLOWED.match(f)]
    assert before == ["config.yaml"]
    assert left == [], f"a replica on PostgreSQL wrote these under its home: {left}"

    # another replica (a fresh home, the same database) sees the same runs
    other_home = home.parent / "other-home"
    other_home.mkdir()
    (other_home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    other = replica_settings.model_copy(update={"home": other_home})
    async with open_api(other) as api2:
        runs_there = (await api2.client.get(f"/api/jobs/{job_id}/runs", headers=AUTH)).json()
        skill = await api2.client.get("/api/skills/shared-steps", headers=AUTH)
    assert runs_there == runs_here and runs_there["runs"]
    assert skill.status_code == 200 and "Step 1." in skill.json()["skill"]["content"]
