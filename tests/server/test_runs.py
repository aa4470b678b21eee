"""`/v1/runs` over HTTP (SPEC §13): runs the server owns, their events (live and replayed),
stop, steer, approvals of dangerous commands, idempotency, the concurrency limit, scopes.

Runs that must stay unfinished while the test acts on them wait on an approval request (a
dangerous terminal command): nothing here sleeps to wait for something.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes import tls
from hermes.auth.keys import create_key
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from hermes.tools.workdir import workdir

from .conftest import AUTH, Api, open_api, open_socket_api, sse_events
from .test_basics import assert_envelope

on_each_backend = pytest.mark.usefixtures("on_each_backend")
DANGEROUS = "rm -rf junk"
FINAL = {"completed", "failed", "cancelled"}
JSON = {"Content-Type": "application/json"}


async def start(api: Api, headers: dict[str, str] | None = None, **body: Any) -> str:
    body.setdefault("input", "hi")
    r = await api.client.post("/v1/runs", json=body, headers=headers or {})
    assert r.status_code == 202, r.text
    payload = r.json()
    assert payload["run_id"].startswith("run_") and len(payload["run_id"]) == 36
    assert payload["status"] in ("queued", "running")
    return str(payload["run_id"])


async def status_of(api: Api, run_id: str, headers: dict[str, str] | None = None) -> dict:
    r = await api.client.get(f"/v1/runs/{run_id}", headers=headers or {})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def wait_status(
    api: Api,
    run_id: str,
    wanted: set[str],
    within: float = 10.0,
    headers: dict[str, str] | None = None,
) -> dict:
    """Poll the run's status with a deadline until it is one of `wanted`."""
    seen: dict = {}

    async def check() -> bool:
        seen.update(await status_of(api, run_id, headers))
        return seen["status"] in wanted

    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"run {run_id} never reached {wanted}: {seen}")
        await asyncio.sleep(0.01)
    return seen


async def events_of(api: Api, run_id: str) -> list[dict]:
    """The whole event stream of a run (the ASGI transport returns once the stream ends)."""
    r = await api.client.get(f"/v1/runs/{run_id}/events")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    return [json.loads(data) for _, data in sse_events(r.text)]


def names(events: list[dict]) -> list[str]:
    return [e["event"] for e in events]


def dangerous_script(fake: FakeModel) -> None:
    fake.enqueue(ToolCalls([("terminal", {"command": DANGEROUS})]), Text("all done"))


def junk(settings: Settings) -> Path:
    path = workdir(settings) / "junk"
    path.mkdir()
    (path / "file.txt").write_text("x")
    return path


def tool_result(fake: FakeModel) -> str:
    last = fake.chat_requests()[-1]["messages"]
    return str(next(m for m in reversed(last) if m["role"] == "tool")["content"])


# -- the basics --------------------------------------------------------------------------


@on_each_backend
async def test_run_completes_and_late_subscriber_gets_the_replay(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(
        Text("Hello from a run, streamed in pieces.", prompt_tokens=7, completion_tokens=5)
    )
    async with open_api(settings) as api:
        run_id = await start(api, input="say hello", instructions="Be brief.")
        done = await wait_status(api, run_id, FINAL)
        assert done["status"] == "completed"
        assert done["object"] == "hermes.run" and done["run_id"] == run_id
        assert done["output"] == "Hello from a run, streamed in pieces."
        assert done["usage"] == {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
        assert done["model"] == "hermes" and done["session_id"]
        assert done["created_at"] <= done["updated_at"]
        assert "error" not in done
        events = await events_of(api, run_id)  # subscribed after the run was over
    assert names(events)[0] == "run.started" and names(events)[-1] == "run.completed"
    deltas = [e["delta"] for e in events if e["event"] == "message.delta"]
    assert len(deltas) > 1 and "".join(deltas) == done["output"]
    assert events[-1]["output"] == done["output"] and events[-1]["usage"] == done["usage"]
    assert all(e["run_id"] == run_id and isinstance(e["timestamp"], float) for e in events)
    sent = fake.chat_requests()[0]["messages"]
    assert {"role": "system", "content": "Be brief."} in sent
    assert sent[-1] == {"role": "user", "content": "say hello"}


@on_each_backend
async def test_another_replica_reads_the_run_back_from_the_store(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Text("stored answer"))
    async with open_api(settings) as first:
        run_id = await start(first)
        await wait_status(first, run_id, FINAL)
        replayed_here = await events_of(first, run_id)
        async with open_api(settings) as second:  # same database, its own process state
            assert (await status_of(second, run_id))["output"] == "stored answer"
            assert await events_of(second, run_id) == replayed_here


@on_each_backend
async def test_a_run_is_told_finished_only_once_every_replica_can_read_it(
    settings: Settings, fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The final save is slow here: the replica running the run answers "completed" only
    after it, so a client that then asks another replica never finds the run unfinished."""
    fake.enqueue(Text("stored answer"))
    async with open_api(settings) as first:
        runs = first.runtime.store.runs
        assert runs is not None
        save = runs.save_run

        def slow_final_save(record: Any, events: Any) -> None:
            if record.status == "completed":
                time.sleep(0.5)
            save(record, events)

        monkeypatch.setattr(runs, "save_run", slow_final_save)
        run_id = await start(first)
        await wait_status(first, run_id, FINAL)
        async with open_api(settings) as second:
            assert (await status_of(second, run_id))["output"] == "stored answer"


@on_each_backend
async def test_input_array_and_session_id_continue_a_session(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Text("noted"), Text("Your name is Ada."))
    async with open_api(settings) as api:
        first = await start(
            api,
            input=[
                {"role": "user", "content": "Earlier question"},
                {"role": "assistant", "content": "Earlier answer"},
                {"role": "user", "content": [{"type": "input_text", "text": "I am Ada."}]},
            ],
            session_id="project:ada",
        )
        assert (await wait_status(api, first, FINAL))["session_id"] == "project:ada"
        second = await start(api, input="What is my name?", session_id="project:ada")
        assert (await wait_status(api, second, FINAL))["output"] == "Your name is Ada."
    sent = fake.chat_requests()[1]["messages"]
    texts = [m["content"] for m in sent if m["role"] in ("user", "assistant")]
    assert texts == ["Earlier question", "Earlier answer", "I am Ada.", "noted", "What is my name?"]


async def test_a_failed_run_reports_the_error(settings: Settings, fake: FakeModel) -> None:
    from hermes.testing.fake_model import Error

    fake.enqueue(Error(401, "bad key"))
    async with open_api(settings) as api:
        run_id = await start(api)
        failed = await wait_status(api, run_id, FINAL)
        events = await events_of(api, run_id)
    assert failed["status"] == "failed" and "output" not in failed
    assert failed["error"]["code"] == "upstream_auth_error"
    assert names(events) == ["run.started", "run.failed"]
    assert events[-1]["error"] == failed["error"]


# -- approvals ---------------------------------------------------------------------------


@on_each_backend
async def test_approval_once_runs_the_dangerous_command(
    settings: Settings, fake: FakeModel
) -> None:
    target = junk(settings)
    dangerous_script(fake)
    async with open_api(settings) as api:
        run_id = await start(api, input="clean up")
        waiting = await wait_status(api, run_id, {"waiting_for_approval"})
        assert waiting["status"] == "waiting_for_approval" and target.exists()
        r = await api.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})
        assert r.status_code == 200, r.text
        assert r.json() == {
            "object": "hermes.run.approval_response",
            "run_id": run_id,
            "choice": "once",
            "resolved": 1,
        }
        assert (await wait_status(api, run_id, FINAL))["output"] == "all done"
        events = await events_of(api, run_id)
    assert not target.exists()
    assert names(events) == [
        "run.started",
        "tool.started",
        "approval.request",
        "approval.responded",
        "tool.completed",
        *(["message.delta"] * (len(events) - 6)),
        "run.completed",
    ]
    request = events[2]
    assert request["tool"] == "terminal" and request["command"] == DANGEROUS
    assert request["choices"] == ["once", "session", "always", "deny"]
    assert events[1]["preview"] == DANGEROUS
    assert events[3]["choice"] == "once" and events[4]["error"] is False
    assert isinstance(events[4]["duration"], float)
    assert "Denied" not in tool_result(fake)


async def test_approval_deny_refuses_the_command(settings: Settings, fake: FakeModel) -> None:
    target = junk(settings)
    dangerous_script(fake)
    async with open_api(settings) as api:
        run_id = await start(api)
        await wait_status(api, run_id, {"waiting_for_approval"})
        r = await api.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "deny"})
        assert r.status_code == 200 and r.json()["choice"] == "deny"
        assert (await wait_status(api, run_id, FINAL))["status"] == "completed"
        again = await api.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})
        assert_envelope(again, 409, "approval_not_pending")
    assert target.exists()
    assert tool_result(fake).startswith("Denied")


async def test_unanswered_approval_is_denied_after_the_timeout(
    settings: Settings, fake: FakeModel
) -> None:
    settings.tools.approval_timeout = 0.2
    target = junk(settings)
    dangerous_script(fake)
    async with open_api(settings) as api:
        run_id = await start(api)
        assert (await wait_status(api, run_id, FINAL))["status"] == "completed"
        events = await events_of(api, run_id)
    responded = next(e for e in events if e["event"] == "approval.responded")
    assert responded["choice"] == "deny" and responded["timed_out"] is True
    assert target.exists() and tool_result(fake).startswith("Denied")


async def test_approval_answers_that_are_refused(settings: Settings, fake: FakeModel) -> None:
    junk(settings)
    dangerous_script(fake)
    async with open_api(settings) as api:
        run_id = await start(api)
        await wait_status(api, run_id, {"waiting_for_approval"})
        bad = await api.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "yes"})
        assert_envelope(bad, 400, "invalid_approval_choice", "choice")
        missing = await api.client.post(f"/v1/runs/{run_id}/approval", json={})
        assert_envelope(missing, 400, param="choice")
        unknown = await api.client.post("/v1/runs/run_nope/approval", json={"choice": "once"})
        assert_envelope(unknown, 404, "run_not_found")
        ok = await api.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "deny"})
        assert ok.status_code == 200
        await wait_status(api, run_id, FINAL)


# -- stop and steer ----------------------------------------------------------------------


@on_each_backend
async def test_stop_cancels_the_run_and_keeps_what_was_said(
    settings: Settings, fake: FakeModel
) -> None:
    junk(settings)
    fake.enqueue(ToolCalls([("terminal", {"command": DANGEROUS})], content="Let me clean up."))
    async with open_api(settings) as api:
        run_id = await start(api, input="tidy the workspace", session_id="tidy")
        await wait_status(api, run_id, {"waiting_for_approval"})
        r = await api.client.post(f"/v1/runs/{run_id}/stop")
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "cancelled"
        assert (await status_of(api, run_id))["status"] == "cancelled"
        events = await events_of(api, run_id)
        again = await api.client.post(f"/v1/runs/{run_id}/stop")
        assert again.status_code == 200 and again.json()["status"] == "cancelled"
        steer = await api.client.post(f"/v1/runs/{run_id}/steer", json={"text": "late"})
        assert_envelope(steer, 409, "run_not_active")
        stored = await asyncio.to_thread(api.runtime.store.get_messages, "default", "tidy")
    assert names(events)[-1] == "run.cancelled"
    assert [m.content for m in stored if m.role == "user"] == ["tidy the workspace"]


async def test_steer_reaches_the_next_model_call(settings: Settings, fake: FakeModel) -> None:
    junk(settings)
    dangerous_script(fake)
    async with open_api(settings) as api:
        run_id = await start(api, input="clean up")
        await wait_status(api, run_id, {"waiting_for_approval"})
        r = await api.client.post(f"/v1/runs/{run_id}/steer", json={"text": "and then say bye"})
        assert r.status_code == 200, r.text
        assert r.json() == {
            "object": "hermes.run.steer_response",
            "run_id": run_id,
            "accepted": True,
        }
        empty = await api.client.post(f"/v1/runs/{run_id}/steer", json={"text": "  "})
        assert_envelope(empty, 400, "invalid_value", "text")
        await api.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})
        await wait_status(api, run_id, FINAL)
    first, second = fake.chat_requests()
    assert "and then say bye" not in json.dumps(first)
    assert second["messages"][-1] == {"role": "user", "content": "and then say bye"}


# -- idempotency, limits, validation ---------------------------------------------------


@on_each_backend
async def test_idempotency_key_replays_and_conflicts(settings: Settings, fake: FakeModel) -> None:
    fake.enqueue(Text("once"))
    async with open_api(settings) as api:
        key = {"Idempotency-Key": "run-key-1"}
        first = await api.client.post("/v1/runs", json={"input": "hi"}, headers=key)
        again = await api.client.post("/v1/runs", json={"input": "hi"}, headers=key)
        other = await api.client.post("/v1/runs", json={"input": "bye"}, headers=key)
        assert first.status_code == again.status_code == 202
        assert "Idempotency-Replayed" not in first.headers
        assert again.headers["Idempotency-Replayed"] == "true"
        assert again.json() == first.json()
        assert_envelope(other, 409, "idempotency_key_conflict", "Idempotency-Key")
        bad = await api.client.post(
            "/v1/runs", json={"input": "hi"}, headers={"Idempotency-Key": ""}
        )
        assert_envelope(bad, 400, "invalid_idempotency_key")
        await wait_status(api, first.json()["run_id"], FINAL)
    assert len(fake.chat_requests()) == 1


async def test_concurrent_runs_over_the_limit_get_429(settings: Settings, fake: FakeModel) -> None:
    settings.server.max_concurrent_runs = 1
    junk(settings)
    dangerous_script(fake)
    fake.enqueue(Text("second"))
    async with open_api(settings) as api:
        held = await start(api)
        await wait_status(api, held, {"waiting_for_approval"})
        over = await api.client.post("/v1/runs", json={"input": "another"})
        error = assert_envelope(over, 429, "too_many_concurrent_runs")
        assert error["type"] == "rate_limit_error" and "max_concurrent_runs" in error["message"]
        await api.client.post(f"/v1/runs/{held}/approval", json={"choice": "deny"})
        await wait_status(api, held, FINAL)
        after = await start(api, input="another")  # a finished run frees its place
        assert (await wait_status(api, after, FINAL))["output"] == "second"


async def test_bad_requests_say_what_is_wrong(settings: Settings, fake: FakeModel) -> None:
    async with open_api(settings) as api:
        post = api.client.post
        assert_envelope(
            await post("/v1/runs", json={"input": "hi", "model": "gpt-9"}),
            404,
            "model_not_found",
            "model",
        )
        assert_envelope(await post("/v1/runs", json={"input": []}), 400, param="input")
        assert_envelope(await post("/v1/runs", json={"input": "  "}), 400, param="input")
        assert_envelope(await post("/v1/runs", json={}), 400, param="input")
        assert_envelope(
            await post("/v1/runs", json={"input": "hi", "inputs": 1}), 400, "unknown_parameter"
        )
        assert_envelope(
            await post("/v1/runs", json={"input": "hi", "session_id": "a b"}),
            400,
            "invalid_session_id",
        )
        assert_envelope(
            await post("/v1/runs", json={"input": "hi", "previous_response_id": "resp_x"}),
            404,
            "previous_response_not_found",
        )
        parts = {
            "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]
        }
        assert_envelope(await post("/v1/runs", json=parts), 400, "unsupported_content")
        assert_envelope(await post("/v1/runs", content=b"{nope", headers=JSON), 400, "invalid_json")
        for path in ("/v1/runs/run_0", "/v1/runs/run_0/events"):
            assert_envelope(await api.client.get(path), 404, "run_not_found", "run_id")
        assert_envelope(await post("/v1/runs/run_0/stop"), 404, "run_not_found")
        assert_envelope(
            await post("/v1/runs/run_0/steer", json={"text": "x"}), 404, "run_not_found"
        )
    assert fake.chat_requests() == []


# -- scopes ------------------------------------------------------------------------------


@on_each_backend
async def test_a_scope_never_sees_another_scopes_run(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Text("for alice"))
    async with open_api(keyed_settings) as api:
        api.client.headers.update(AUTH)
        alice = {"X-Hermes-User-Id": "alice"}
        run_id = await start(api, headers=alice, input="hello")
        token, _ = await asyncio.to_thread(create_key, api.runtime.store, "bob")
        bob_key = {"Authorization": f"Bearer {token}"}
        for other in ({"X-Hermes-User-Id": "bob"}, {}, bob_key):
            r = await api.client.get(f"/v1/runs/{run_id}", headers=other)
            assert_envelope(r, 404, "run_not_found")
            for action, body in (
                ("stop", None),
                ("steer", {"text": "x"}),
                ("approval", {"choice": "once"}),
            ):
                r = await api.client.post(f"/v1/runs/{run_id}/{action}", json=body, headers=other)
                assert_envelope(r, 404, "run_not_found")
            r = await api.client.get(f"/v1/runs/{run_id}/events", headers=other)
            assert_envelope(r, 404, "run_not_found")
        done = await wait_status(api, run_id, FINAL, headers=alice)
        assert done["output"] == "for alice"
        # the scoped key acts as its user: its runs are its own, and the owner's key with
        # that user's header sees them
        mine = await start(api, headers=bob_key, input="bob here")
        assert (
            await api.client.get(f"/v1/runs/{mine}", headers={"X-Hermes-User-Id": "bob"})
        ).status_code == 200
        assert_envelope(
            await api.client.get(f"/v1/runs/{mine}", headers=alice), 404, "run_not_found"
        )
        unauthenticated = await api.client.get(
            f"/v1/runs/{mine}", headers={"Authorization": "Bearer wrong"}
        )
        assert_envelope(unauthenticated, 401)


# -- the wire ----------------------------------------------------------------------------


async def test_events_stream_live_over_a_real_socket(settings: Settings, fake: FakeModel) -> None:
    """Subscribe while the run waits for approval: past events first, then live ones, and
    the stream ends after the final event."""
    target = junk(settings)
    dangerous_script(fake)
    async with open_socket_api(settings) as (base, _runtime):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, timeout=10
        ) as client:
            r = await client.post("/v1/runs", json={"input": "clean up"})
            run_id = r.json()["run_id"]
            seen: list[dict] = []
            async with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                async for line in stream.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    seen.append(json.loads(line[6:]))
                    if seen[-1]["event"] == "approval.request":
                        answer = await client.post(
                            f"/v1/runs/{run_id}/approval", json={"choice": "session"}
                        )
                        assert answer.status_code == 200
            # the loop ended because the server closed the stream
    assert names(seen)[:3] == ["run.started", "tool.started", "approval.request"]
    assert names(seen)[-1] == "run.completed" and not target.exists()


async def test_runs_are_in_the_openapi_document(settings: Settings) -> None:
    async with open_api(settings) as api:
        paths = api.app.openapi()["paths"]
    expected = {
        ("/v1/runs", "post"),
        ("/v1/runs/{run_id}", "get"),
        ("/v1/runs/{run_id}/events", "get"),
        ("/v1/runs/{run_id}/stop", "post"),
        ("/v1/runs/{run_id}/steer", "post"),
        ("/v1/runs/{run_id}/approval", "post"),
    }
    for path, method in expected:
        assert paths[path][method]["summary"], (path, method)
    assert (
        "text/event-stream"
        in paths["/v1/runs/{run_id}/events"]["get"]["responses"]["200"]["content"]
    )
