"""`POST /api/sessions/{id}/chat` and `/chat/stream` (SPEC §13): a turn in a named session of
the caller's scope, answered at once or streamed with the runs' event shapes."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from hermes import tls
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from hermes.tools.workdir import workdir

from .conftest import AUTH, open_api, open_socket_api, sse_events
from .test_basics import assert_envelope

on_each_backend = pytest.mark.usefixtures("on_each_backend")


@on_each_backend
async def test_chat_continues_the_session_in_the_callers_scope(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(
        Text("Hi Ada.", prompt_tokens=4, completion_tokens=2),
        Text("You are Ada."),
        Text("I do not know your name."),
    )
    async with open_api(keyed_settings) as api:
        api.client.headers.update(AUTH)
        ada = {"X-Hermes-User-Id": "ada"}
        first = await api.client.post(
            "/api/sessions/chat-1/chat", json={"message": "I am Ada."}, headers=ada
        )
        assert first.status_code == 200, first.text
        assert first.json() == {
            "object": "hermes.session.chat",
            "session_id": "chat-1",
            "output": "Hi Ada.",
            "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
        }
        second = await api.client.post(
            "/api/sessions/chat-1/chat", json={"message": "Who am I?"}, headers=ada
        )
        assert second.json()["output"] == "You are Ada."
        other = await api.client.post(
            "/api/sessions/chat-1/chat",
            json={"message": "Who am I?"},
            headers={"X-Hermes-User-Id": "bob"},
        )
        assert other.json()["output"] == "I do not know your name."
    ada_turn, bob_turn = fake.chat_requests()[1:]
    assert "I am Ada." in json.dumps(ada_turn["messages"])
    assert "I am Ada." not in json.dumps(bob_turn["messages"])


@on_each_backend
async def test_chat_stream_sends_the_runs_events(settings: Settings, fake: FakeModel) -> None:
    fake.enqueue(Text("Streamed answer in several pieces."))
    async with open_api(settings) as api:
        r = await api.client.post("/api/sessions/s-1/chat/stream", json={"message": "hello"})
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/event-stream")
        run_id = r.headers["X-Hermes-Run-Id"]
        events = [json.loads(data) for _, data in sse_events(r.text)]
        run = (await api.client.get(f"/v1/runs/{run_id}")).json()
    assert events[0]["event"] == "run.started" and events[-1]["event"] == "run.completed"
    deltas = "".join(e["delta"] for e in events if e["event"] == "message.delta")
    assert deltas == events[-1]["output"] == "Streamed answer in several pieces."
    assert all(e["run_id"] == run_id for e in events)
    assert run["status"] == "completed" and run["session_id"] == "s-1"


async def test_chat_refuses_a_dangerous_command_it_cannot_ask_about(
    settings: Settings, fake: FakeModel
) -> None:
    target = workdir(settings) / "junk"
    target.mkdir()
    fake.enqueue(ToolCalls([("terminal", {"command": "rm -rf junk"})]), Text("could not"))
    async with open_api(settings) as api:
        r = await api.client.post("/api/sessions/s-2/chat", json={"message": "clean up"})
    assert r.status_code == 200 and r.json()["output"] == "could not"
    tool = next(m for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool")
    assert tool["content"].startswith("Approval needed") and target.exists()


async def test_bad_requests_say_what_is_wrong(settings: Settings, fake: FakeModel) -> None:
    async with open_api(settings) as api:
        post = api.client.post
        for path in ("/api/sessions/a%20b/chat", "/api/sessions/a%20b/chat/stream"):
            r = await post(path, json={"message": "hi"})
            assert_envelope(r, 400, "invalid_session_id", "session_id")
        assert_envelope(
            await post("/api/sessions/s/chat", json={"message": " "}), 400, param="message"
        )
        assert_envelope(await post("/api/sessions/s/chat", json={}), 400, param="message")
        assert_envelope(
            await post("/api/sessions/s/chat", json={"message": "hi", "x": 1}),
            400,
            "unknown_parameter",
        )
    assert fake.chat_requests() == []


async def test_session_chat_needs_the_key(keyed_settings: Settings) -> None:
    async with open_api(keyed_settings) as api:
        r = await api.client.post("/api/sessions/s/chat", json={"message": "hi"})
        assert_envelope(r, 401, "invalid_api_key")
        paths = api.app.openapi()["paths"]
    assert paths["/api/sessions/{session_id}/chat"]["post"]["summary"]
    assert paths["/api/sessions/{session_id}/chat/stream"]["post"]["summary"]


async def test_a_streamed_turn_survives_the_client_going_away(
    settings: Settings, fake: FakeModel
) -> None:
    """The stream only reads the run: a client that hangs up mid-turn leaves it running, and
    its approval can still be answered on the run."""
    target = workdir(settings) / "junk"
    target.mkdir()
    fake.enqueue(ToolCalls([("terminal", {"command": "rm -rf junk"})]), Text("cleaned"))
    async with open_socket_api(settings) as (base, _runtime):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, timeout=10
        ) as client:
            async with client.stream(
                "POST", "/api/sessions/s-3/chat/stream", json={"message": "clean up"}
            ) as stream:
                run_id = stream.headers["X-Hermes-Run-Id"]
                async for line in stream.aiter_lines():
                    if line.startswith("data: ") and "approval.request" in line:
                        break  # hang up while the run waits
            r = await client.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})
            assert r.status_code == 200, r.text
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while (run := (await client.get(f"/v1/runs/{run_id}")).json())["status"] != "completed":
                assert loop.time() < deadline, run
                await asyncio.sleep(0.01)
    assert run["output"] == "cleaned" and not target.exists()
