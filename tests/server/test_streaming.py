"""SSE streaming over a real socket: chunks, tool progress without internals, usage, disconnects."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading

import httpx
import openai

from hermes import tls
from hermes.config.settings import Settings
from hermes.testing.fake_model import Error, FakeModel, Text, ToolCalls

from .conftest import TEST_TOOLS, chat_body, chunks, open_socket_api, sse_events, wait_until


async def _stream(base: str, body: dict, headers: dict | None = None) -> httpx.Response:
    async with httpx.AsyncClient(verify=tls.httpx_context(), base_url=base, timeout=10) as client:
        return await client.post("/v1/chat/completions", json=body, headers=headers or {})


async def test_stream_sends_role_deltas_final_usage_and_done(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Text("Hello there, Alex!", chunk_chars=5, prompt_tokens=30, completion_tokens=6))
    async with open_socket_api(settings) as (base, runtime):
        r = await _stream(base, chat_body("hi", stream=True), {"X-Hermes-Session-Id": "s"})
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-hermes-session-id"] == "s"
        assert r.headers["cache-control"] == "no-cache"
        assert r.text.endswith("data: [DONE]\n\n")
        got = chunks(r.text)
        assert all(c["object"] == "chat.completion.chunk" for c in got)
        assert len({c["id"] for c in got}) == 1
        assert got[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in got[1:])
        assert text == "Hello there, Alex!"
        assert len(got) >= 4  # streamed in pieces, not one blob
        final = got[-1]
        assert final["choices"][0]["finish_reason"] == "stop" and final["choices"][0]["delta"] == {}
        assert final["usage"] == {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
        stored = runtime.store.get_messages("default", "s")
        assert [m.content for m in stored] == ["hi", "Hello there, Alex!"]


async def test_tool_progress_events_never_leak_arguments_or_results(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(
        ToolCalls([("lookup_secret", {"name": "ARGUMENT-XYZ"})], content="Let me check."),
        Text("All done."),
    )
    async with open_socket_api(settings, tools=TEST_TOOLS) as (base, runtime):
        r = await _stream(base, chat_body("go", stream=True), {"X-Hermes-Session-Id": "t"})
    assert "ARGUMENT-XYZ" not in r.text and "TOOL-RESULT" not in r.text
    events = sse_events(r.text)
    progress = [json.loads(d) for name, d in events if name == "hermes.tool.progress"]
    assert [(p["tool"], p["status"]) for p in progress] == [
        ("lookup_secret", "running"),
        ("lookup_secret", "completed"),
    ]
    assert progress[0]["toolCallId"] == progress[1]["toolCallId"] == "call_1"
    assert all(
        set(p)
        <= {"id", "object", "created", "model", "choices", "hermes", "tool", "toolCallId", "status"}
        for p in progress
    )
    # an ordinary chunk with an empty delta, so plain client loops pass over it
    assert all(p["object"] == "chat.completion.chunk" for p in progress)
    assert all(
        p["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": None}]
        for p in progress
    )
    assert progress[0]["hermes"] == {
        "type": "tool.progress",
        "tool": "lookup_secret",
        "toolCallId": "call_1",
        "status": "running",
    }
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks(r.text))
    assert text == "Let me check.All done."
    # the tool result really was produced and sent to the model, just not to the client
    assert "TOOL-RESULT-ARGUMENT-XYZ" in json.dumps(fake.chat_requests()[1]["messages"])


async def test_openai_sdk_streams_through_tool_progress(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(ToolCalls([("add", {"a": 1, "b": 2})]), Text("three", chunk_chars=2))
    async with open_socket_api(settings, tools=TEST_TOOLS) as (base, _):
        client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="hermes", max_retries=0)
        try:
            stream = await client.chat.completions.create(
                model="hermes", messages=[{"role": "user", "content": "1+2"}], stream=True
            )
            text, usage, finish = "", None, None
            # the plain loop every tutorial shows: no guard for empty `choices`
            async for chunk in stream:
                text += chunk.choices[0].delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
                usage = chunk.usage or usage
        finally:
            await client.close()
    assert text == "three" and finish == "stop" and usage is not None and usage.total_tokens > 0


async def test_failure_before_first_token_is_a_real_http_error(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Error(401, "nope"))
    async with open_socket_api(settings) as (base, runtime):
        r = await _stream(base, chat_body("hi", stream=True), {"X-Hermes-Session-Id": "e"})
        assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_auth_error"
        assert runtime.store.get_messages("default", "e") == []


async def test_failure_mid_stream_sends_an_error_event_then_done(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(ToolCalls([("add", {"a": 1, "b": 2})], content="Working."), Error(500, "died"))
    async with open_socket_api(settings, tools=TEST_TOOLS) as (base, runtime):
        r = await _stream(base, chat_body("hi", stream=True), {"X-Hermes-Session-Id": "m"})
        assert r.status_code == 200
        events = sse_events(r.text)
        assert events[-1] == (None, "[DONE]")
        error = json.loads(events[-2][1])["error"]
        assert error["code"] == "upstream_error" and "HTTP 500" in error["message"]
        assert runtime.store.get_messages("default", "m") == []


async def test_client_disconnect_cancels_the_turn_and_keeps_what_was_said(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Text("partial answer " * 40, chunk_chars=4, delay=0.05))
    async with open_socket_api(settings) as (base, runtime):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, timeout=10
        ) as client:
            async with client.stream(
                "POST",
                "/v1/chat/completions",
                json=chat_body("go", stream=True),
                headers={"X-Hermes-Session-Id": "cut"},
            ) as r:
                got = ""
                async for piece in r.aiter_text():
                    got += piece
                    if got.count('"content"') >= 3:
                        break  # leaving the block closes the connection mid-stream

        def stored() -> list:
            return runtime.store.get_messages("default", "cut")

        await wait_until(lambda: len(stored()) == 2, what="the interrupted turn to be stored")
        user, partial = stored()
        assert user.content == "go"
        assert partial.content.startswith("part") and partial.content.endswith("[interrupted]")
        assert len(partial.content) < len("partial answer " * 40)
        # the session is free again for the next turn
        fake.enqueue(Text("next"))
        r2 = await _stream(base, chat_body("again"), {"X-Hermes-Session-Id": "cut"})
        assert r2.status_code == 200
        await asyncio.to_thread(fake.wait_for_requests, 2)


async def test_non_streaming_turn_survives_a_client_that_hangs_up(
    settings: Settings, fake: FakeModel
) -> None:
    # the model answers only once the client has hung up: no race between a client timeout
    # and the server reading the request, however loaded the machine
    in_flight, hung_up = threading.Event(), threading.Event()

    def answer_after_the_hang_up(body: dict) -> Text:
        in_flight.set()
        hung_up.wait(30)
        return Text("done anyway")

    fake.default = answer_after_the_hang_up
    async with open_socket_api(settings) as (base, runtime):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, timeout=30
        ) as client:
            post = asyncio.create_task(
                client.post(
                    "/v1/chat/completions",
                    json=chat_body("x"),
                    headers={"X-Hermes-Session-Id": "gone"},
                )
            )
            await asyncio.to_thread(in_flight.wait, 30)  # the turn waits on the model
            post.cancel()  # the client hangs up
            with contextlib.suppress(asyncio.CancelledError):
                await post
            if not post.cancelled():
                raise AssertionError("the request should have been cut off on the client side")
        hung_up.set()

        def stored() -> list:
            return runtime.store.get_messages("default", "gone")

        await wait_until(
            lambda: len(stored()) == 2, what="the finished turn to be stored", within=30
        )
        assert [m.content for m in stored()] == ["x", "done anyway"]
