"""Per-session brains (SPEC §6, `server.session_scopes`): the tutorial's "give each user their
own session ID" keeps users' notes, search and jobs apart when the setting is on.

With the setting off (the default) sessions share the owner's notes: that documented bleed is
asserted too, so the isolation test cannot pass because nothing was written at all.
"""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from hermes.config.settings import ConfigError, Settings, load_settings
from hermes.memory.notes import open_notes
from hermes.memory.review import REVIEW_PROMPT
from hermes.scopes import ScopeConflictError, resolve_scope, scope_for_user
from hermes.server.serve import check_bind
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

from ..conftest import run_cli
from .conftest import AUTH, open_api, open_socket_api
from .test_serve import hermes_serve

pytestmark = pytest.mark.usefixtures("on_each_backend")

FACT = "Name is Alex; building a todo app in Go"


def _is_review(body: dict[str, Any]) -> bool:
    return REVIEW_PROMPT in json.dumps(body)


def _script(body: dict[str, Any]) -> Text | ToolCalls:
    """The model: answers turns; in a memory pass it saves who Alex is, once, where Alex spoke."""
    if not _is_review(body):
        return Text("ok")
    seen = json.dumps(body["messages"])
    if "My name is Alex" in seen and '"role": "tool"' not in seen:
        return ToolCalls([("memory", {"target": "user", "action": "add", "content": FACT})])
    return Text("Nothing to save.")


def _turns(fake: FakeModel) -> list[dict[str, Any]]:
    return [b for b in fake.chat_requests() if not _is_review(b)]


def _tutorial(base: str, session: str, message: str) -> str:
    """SPEC §1's client code, with the session id the tutorial tells each user to get."""
    client = OpenAI(base_url=f"{base}/v1", api_key="hermes", max_retries=0)
    r = client.chat.completions.create(
        model="hermes",
        messages=[{"role": "user", "content": message}],
        extra_headers={"X-Hermes-Session-Id": session},
    )
    return r.choices[0].message.content or ""


@pytest.mark.parametrize("namespaces", [["user"], []], ids=["on", "off"])
async def test_tutorial_users_get_their_own_brain(
    settings: Settings, fake: FakeModel, home: Path, namespaces: list[str]
) -> None:
    settings.memory.review_interval = 1
    settings.server.session_scopes = namespaces
    fake.default = _script
    async with open_socket_api(settings) as (base, runtime):
        await asyncio.to_thread(
            _tutorial, base, "user:1", "My name is Alex and I'm building a todo app in Go."
        )
        await runtime.agent.drain()  # the memory pass has written its note
        await asyncio.to_thread(_tutorial, base, "user:2", "What do you know about me?")
        prompt_of_user_2 = _turns(fake)[-1]["messages"][0]["content"]

        fake.enqueue(
            ToolCalls([("session_search", {"query": "Alex"})]),
            Text("done"),
            when=lambda body: not _is_review(body),
        )
        await asyncio.to_thread(_tutorial, base, "user:2", "Did I tell you my name?")
        await runtime.agent.drain()
        search_result = next(m for m in _turns(fake)[-1]["messages"] if m["role"] == "tool")
        notes = functools.partial(open_notes, settings, store=runtime.store)
        user_1 = notes(scope_for_user("1")).read("user").entries
        owner = notes("default").read("user").entries
    if namespaces:
        assert user_1 == [FACT] and owner == []
        assert "Alex" not in prompt_of_user_2
        assert "todo app" not in search_result["content"]
    else:  # documented: without the setting every session shares the owner's brain
        assert owner == [FACT] and user_1 == []
        assert FACT in prompt_of_user_2
        assert "todo app" in search_result["content"]


async def test_a_session_brain_is_the_header_brain(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    """`user:1` and `X-Hermes-User-Id: 1` name one scope: its notes, transcripts and jobs."""
    keyed_settings.memory.review_interval = 1
    keyed_settings.server.session_scopes = ["user"]
    fake.default = _script
    async with open_api(keyed_settings) as api:
        api.client.headers.update(AUTH)
        r = await api.chat("My name is Alex.", headers={"X-Hermes-Session-Id": "user:1"})
        assert r.status_code == 200 and r.headers["x-hermes-session-id"] == "user:1"
        await api.runtime.agent.drain()
        r = await api.chat("Who am I?", headers={"X-Hermes-User-Id": "1"})
        assert r.status_code == 200
        assert FACT in _turns(fake)[-1]["messages"][0]["content"]
        r = await api.chat("Who am I?", headers={"X-Hermes-Session-Id": "owner-chat"})
        assert FACT not in _turns(fake)[-1]["messages"][0]["content"]
        tools = [{t["function"]["name"] for t in b.get("tools", [])} for b in _turns(fake)]
        assert "memory" in tools[0] and "write_file" not in tools[0]  # the end-user toolset
        assert tools[0] == tools[1] and "write_file" in tools[2]  # the owner's is full

        job = {"name": "standup", "schedule": "0 9 * * 1-5", "prompt": "plan my day"}
        r = await api.client.post("/api/jobs", json=job, headers={"X-Hermes-Session-Id": "user:1"})
        assert r.status_code == 201, r.text
        first = r.json()["job"]["id"]
        # the same job by the session id in the body: the same scope, so the same job (200)
        r = await api.client.post("/api/jobs", json={**job, "session_id": "user:1"})
        assert r.status_code == 200 and r.json()["job"]["id"] == first, r.text
        r = await api.client.post(
            "/api/jobs", json={**job, "name": "standup-2", "session_id": "user:1"}
        )
        assert r.status_code == 201, r.text

        async def names(headers: dict[str, str]) -> list[str]:
            r = await api.client.get("/api/jobs", headers=headers)
            assert r.status_code == 200, r.text
            return [j["name"] for j in r.json()["jobs"]]

        assert await names({"X-Hermes-User-Id": "1"}) == ["standup", "standup-2"]
        assert await names({"X-Hermes-Session-Id": "user:1"}) == ["standup", "standup-2"]
        assert await names({"X-Hermes-Session-Id": "user:2"}) == []
        assert await names({}) == []


@pytest.mark.parametrize(
    "namespaces, headers, status",
    [
        (["user"], {"X-Hermes-User-Id": "2", "X-Hermes-Session-Id": "user:1"}, 400),
        (["user"], {"X-Hermes-User-Id": "1", "X-Hermes-Session-Id": "user:1"}, 200),
        (["user"], {"X-Hermes-User-Id": "2", "X-Hermes-Session-Key": "user:1"}, 400),
        ([], {"X-Hermes-User-Id": "2", "X-Hermes-Session-Id": "user:1"}, 200),
    ],
)
async def test_header_and_session_naming_two_users_is_refused(
    keyed_settings: Settings,
    fake: FakeModel,
    namespaces: list[str],
    headers: dict[str, str],
    status: int,
) -> None:
    keyed_settings.server.session_scopes = namespaces
    keyed_settings.memory.review_interval = 0
    fake.default = Text("ok")
    async with open_api(keyed_settings) as api:
        api.client.headers.update(AUTH)
        r = await api.chat("hi", headers=headers)
        assert r.status_code == status, r.text
        if status == 400:
            error = r.json()["error"]
            assert error["code"] == "conflicting_scope" and "'1'" in error["message"]
            assert not fake.chat_requests()  # refused before any model call
        r = await api.client.get("/api/jobs", headers=headers)
        assert r.status_code == status


async def test_a_bad_session_id_in_a_job_body_is_a_400(settings: Settings) -> None:
    settings.server.session_scopes = ["user"]
    async with open_api(settings) as api:
        r = await api.client.post(
            "/api/jobs",
            json={"name": "x", "schedule": "every 1h", "prompt": "p", "session_id": "user:a b"},
        )
        assert r.status_code == 400 and "session" in r.json()["error"]["message"]


def test_namespaces_are_disjoint_and_only_listed_ones_count() -> None:
    assert resolve_scope("default", "user:7", ["user", "team"]) == "user:7"
    assert resolve_scope("default", "team:7", ["user", "team"]) == scope_for_user("team:7")
    assert resolve_scope("default", "team:7", ["user"]) == "default"
    assert resolve_scope("default", "user:", ["user"]) == "default"
    assert resolve_scope("default", "my-first-agent", ["user"]) == "default"
    assert resolve_scope("user:7", "user:7", ["user"]) == "user:7"
    with pytest.raises(ScopeConflictError, match="'8'"):
        resolve_scope("user:8", "user:7", ["user"])


def test_session_scopes_from_the_environment(home: Path) -> None:
    settings = load_settings(env={"HERMES_HOME": str(home), "HERMES_SESSION_SCOPES": "user, team"})
    assert settings.server.session_scopes == ["user", "team"]
    with pytest.raises(ConfigError, match="HERMES_SESSION_SCOPES.*'user:'"):
        load_settings(env={"HERMES_HOME": str(home), "HERMES_SESSION_SCOPES": "user:"})


@pytest.mark.usefixtures("model_env")
def test_public_bind_without_a_key_needs_the_explicit_opt_in(
    monkeypatch: pytest.MonkeyPatch, fake: FakeModel
) -> None:
    r = run_cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2 and "HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND=1" in r.stderr
    monkeypatch.setenv("HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND", "1")
    fake.default = Text("ok")
    with hermes_serve("--host", "0.0.0.0") as (_, base):
        port = base.rsplit(":", 1)[1]
        assert _tutorial(f"http://127.0.0.1:{port}", "s", "hi") == "ok"
    warning = check_bind(load_settings(), "0.0.0.0")
    assert warning is not None and "NO server key" in warning and "127.0.0.1:11434" in warning
    monkeypatch.setenv("HERMES_API_KEY", "short")
    r = run_cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2 and "has only 5 characters" in r.stderr
