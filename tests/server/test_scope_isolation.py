"""Security: one scope can never read, continue or search another scope's sessions.

Every attack has a positive control (the owner of the data does see it), so a test that
passes because nothing was stored at all would fail instead.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from hermes import tls
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

from .conftest import AUTH, Api, chat_body, chunks, open_api, open_socket_api
from .test_basics import assert_envelope

pytestmark = pytest.mark.usefixtures("on_each_backend")

SECRET = "ALICE-SECRET-7f3a"
ALICE = {"X-Hermes-User-Id": "alice"}


def _seen(fake: FakeModel) -> str:
    """Everything the model was sent in the newest request (system prompt, history, tool results)."""
    return json.dumps(fake.chat_requests()[-1])


@pytest.fixture
async def planted(keyed_settings: Settings, fake: FakeModel) -> AsyncIterator[Api]:
    """Alice told Hermes a secret in her session `chat-1`."""
    async with open_api(keyed_settings) as api:
        api.client.headers.update(AUTH)
        fake.enqueue(Text("Noted."))
        r = await api.chat(
            f"My password hint is {SECRET}.", headers={**ALICE, "X-Hermes-Session-Id": "chat-1"}
        )
        assert r.status_code == 200
        fake.default = Text("I have no idea.")
        yield api


def _tool_output(fake: FakeModel) -> str:
    """The tool results the model got in the newest request, minus the echo of the query."""
    results = [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    assert results, "the scripted tool call did not run"
    out = []
    for text in results:
        try:
            data = json.loads(text)
        except ValueError:
            out.append(text)
            continue
        if isinstance(data, dict):
            data.pop("query", None)
        out.append(json.dumps(data))
    return "\n".join(out)


# Every way a different caller could name Alice's `chat-1`.
INTRUDERS = [
    pytest.param({"X-Hermes-User-Id": "bob"}, id="other-user"),
    pytest.param({}, id="default-scope"),
    pytest.param({"X-Hermes-User-Id": "Alice"}, id="case-variant"),
    pytest.param({"X-Hermes-User-Id": "user:alice"}, id="prefixed-user-id"),
    pytest.param({"X-Hermes-User-Id": "alice/.."}, id="path-trick"),
    pytest.param({"X-Hermes-User-Id": "alice@"}, id="suffix"),
]
SESSION_HEADERS = ["X-Hermes-Session-Id", "X-Hermes-Session-Key"]


@pytest.mark.parametrize("who", INTRUDERS)
@pytest.mark.parametrize("header", SESSION_HEADERS)
async def test_continuing_another_scopes_session_sees_nothing(
    planted: Api, fake: FakeModel, who: dict, header: str
) -> None:
    r = await planted.chat("What is my password hint?", headers={**who, header: "chat-1"})
    assert r.status_code == 200 and r.headers["x-hermes-session-id"] == "chat-1"
    assert SECRET not in _seen(fake) and SECRET not in r.text
    # Alice's transcript is untouched by the intruder's turn
    alice = planted.runtime.store.get_messages("user:alice", "chat-1")
    assert [m.content for m in alice] == [f"My password hint is {SECRET}.", "Noted."]
    # positive control: Alice herself continues and the model sees her history
    await planted.chat("And again?", headers={**ALICE, header: "chat-1"})
    assert SECRET in _seen(fake)


@pytest.mark.parametrize("who", INTRUDERS)
async def test_streaming_continuation_sees_nothing(
    planted: Api, fake: FakeModel, who: dict
) -> None:
    r = await planted.chat("hint?", headers={**who, "X-Hermes-Session-Id": "chat-1"}, stream=True)
    assert r.status_code == 200 and chunks(r.text)
    assert SECRET not in _seen(fake) and SECRET not in r.text


@pytest.mark.parametrize("who", INTRUDERS)
async def test_session_search_cannot_find_or_read_another_scope(
    planted: Api, fake: FakeModel, who: dict
) -> None:
    for args in (
        {"query": SECRET},
        {"query": "password hint"},
        {"session_id": "chat-1"},
        {"session_id": "chat-1", "around": 0},
        {},
    ):
        fake.enqueue(ToolCalls([("session_search", args)]), Text("done"))
        r = await planted.chat("search my past", headers={**who, "X-Hermes-Session-Id": "probe"})
        assert r.status_code == 200
        assert SECRET not in _tool_output(fake), args
    # positive control: Alice's own search finds it
    fake.enqueue(ToolCalls([("session_search", {"query": "password hint"})]), Text("found"))
    await planted.chat("search my past", headers={**ALICE, "X-Hermes-Session-Id": "probe"})
    assert SECRET in _tool_output(fake)


async def test_notes_stay_in_their_scope(planted: Api, fake: FakeModel) -> None:
    note = "ALICE-NOTE: lives in Paris"
    fake.enqueue(
        ToolCalls([("memory", {"target": "user", "action": "add", "content": note})]),
        Text("Saved."),
    )
    assert (
        await planted.chat("remember where I live", headers={**ALICE, "X-Hermes-Session-Id": "n1"})
    ).status_code == 200
    for who in ({"X-Hermes-User-Id": "bob"}, {}, {"X-Hermes-User-Id": "user:alice"}):
        await planted.chat("hello", headers={**who, "X-Hermes-Session-Id": "fresh"})
        assert "ALICE-NOTE" not in _seen(fake)
        await planted.chat("hello", headers=who)  # stateless too
        assert "ALICE-NOTE" not in _seen(fake)
    await planted.chat("hello", headers={**ALICE, "X-Hermes-Session-Id": "fresh"})
    assert "ALICE-NOTE" in _seen(fake)


@pytest.mark.parametrize("who", INTRUDERS)
async def test_idempotency_keys_never_replay_another_scopes_answer(
    planted: Api, fake: FakeModel, who: dict
) -> None:
    body = chat_body("tell me the hint")
    fake.enqueue(Text(f"It is {SECRET}."))
    r = await planted.client.post(
        "/v1/chat/completions", json=body, headers={**ALICE, "Idempotency-Key": "same-key"}
    )
    assert SECRET in r.text
    r = await planted.client.post(
        "/v1/chat/completions", json=body, headers={**who, "Idempotency-Key": "same-key"}
    )
    assert r.status_code == 200 and SECRET not in r.text
    assert "idempotency-replayed" not in r.headers


async def test_stateless_requests_of_others_see_nothing(planted: Api, fake: FakeModel) -> None:
    r = await planted.chat("hint?", headers={"X-Hermes-User-Id": "bob"})
    assert r.status_code == 200 and SECRET not in _seen(fake)


async def test_user_header_without_a_valid_key_is_refused(planted: Api, fake: FakeModel) -> None:
    before = len(fake.chat_requests())
    for auth in ({"Authorization": ""}, {"Authorization": "Bearer guess"}):
        r = await planted.client.post(
            "/v1/chat/completions",
            json=chat_body("hint?"),
            headers={**ALICE, "X-Hermes-Session-Id": "chat-1", **auth},
        )
        assert_envelope(r, 401, "invalid_api_key")
    assert len(fake.chat_requests()) == before


async def test_without_a_server_key_nobody_can_claim_a_user(
    settings: Settings, fake: FakeModel
) -> None:
    async with open_api(settings) as api:
        for headers in (
            {**ALICE},
            {**ALICE, "X-Hermes-Session-Id": "chat-1"},
            {**ALICE, "Authorization": "Bearer anything"},
        ):
            assert_envelope(
                await api.chat("hint?", headers=headers), 403, "user_scope_requires_key"
            )
            r = await api.chat("hint?", headers=headers, stream=True)
            assert_envelope(r, 403, "user_scope_requires_key")
        assert fake.chat_requests() == []


async def test_isolation_holds_over_a_real_socket(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    async with open_socket_api(keyed_settings) as (base, runtime):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, headers=AUTH
        ) as client:
            await client.post(
                "/v1/chat/completions",
                json=chat_body(f"secret {SECRET}"),
                headers={**ALICE, "X-Hermes-Session-Id": "s"},
            )
            r = await client.post(
                "/v1/chat/completions",
                json=chat_body("what?", stream=True),
                headers={"X-Hermes-User-Id": "bob", "X-Hermes-Session-Id": "s"},
            )
            assert r.status_code == 200 and SECRET not in _seen(fake)
        assert [m.role for m in runtime.store.get_messages("user:bob", "s")] == [
            "user",
            "assistant",
        ]
        assert len(runtime.store.get_messages("user:alice", "s")) == 2


async def test_jobs_of_one_scope_are_invisible_to_others(planted: Api, fake: FakeModel) -> None:
    job = {"name": "alice-digest", "schedule": "0 9 * * *", "prompt": f"digest {SECRET}"}
    r = await planted.client.post("/api/jobs", json=job, headers=ALICE)
    assert r.status_code == 201, r.text
    job_id = r.json()["job"]["id"]
    for who in ({"X-Hermes-User-Id": "bob"}, {}, {"X-Hermes-User-Id": "user:alice"}):
        listed = await planted.client.get("/api/jobs", headers=who)
        assert listed.status_code == 200 and SECRET not in listed.text
        for method, path in (
            ("GET", ""),
            ("PATCH", ""),
            ("DELETE", ""),
            ("POST", "/pause"),
            ("POST", "/resume"),
            ("POST", "/run"),
            ("GET", "/runs"),
        ):
            kwargs = {"json": {"name": "x"}} if method == "PATCH" else {}
            r = await planted.client.request(
                method, f"/api/jobs/{job_id}{path}", headers=who, **kwargs
            )
            assert r.status_code == 404 and SECRET not in r.text, (method, path, r.text)
    mine = await planted.client.get(f"/api/jobs/{job_id}", headers=ALICE)
    assert mine.status_code == 200 and SECRET in mine.text


async def test_a_job_cannot_continue_another_scopes_session(planted: Api, fake: FakeModel) -> None:
    job = {
        "name": "bob-job",
        "schedule": "0 9 * * *",
        "prompt": "BOB-JOB what is the hint?",
        "session_id": "chat-1",
    }
    bob = {"X-Hermes-User-Id": "bob"}
    r = await planted.client.post("/api/jobs", json=job, headers=bob)
    assert r.status_code == 201, r.text
    r = await planted.client.post(f"/api/jobs/{r.json()['job']['id']}/run", headers=bob)
    assert r.status_code == 200, r.text

    def job_request() -> dict | None:
        return next((b for b in fake.chat_requests() if "BOB-JOB" in json.dumps(b)), None)

    from .conftest import wait_until

    await wait_until(lambda: job_request() is not None, what="the job's model request")
    assert SECRET not in json.dumps(job_request())
