"""POST /v1/chat/completions without streaming: request shapes, sessions, upstream failures."""

from __future__ import annotations

import asyncio

import pytest

from hermes import __version__
from hermes.config.settings import Settings
from hermes.testing.fake_model import ContextLengthError, Error, FakeModel, Hang, Text, ToolCalls

from .conftest import TEST_TOOLS, Api, open_api
from .test_basics import assert_envelope

pytestmark = pytest.mark.usefixtures("on_each_backend")


def sent(fake: FakeModel, i: int = -1) -> list[dict]:
    return fake.chat_requests()[i]["messages"]


def contents(messages: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages if m["role"] != "system"]


async def test_completion_has_the_openai_shape(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("Hello!", prompt_tokens=40, completion_tokens=2))
    r = await api.chat("hi")
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    assert body["model"] == "hermes"
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello!"},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    assert body["usage"] == {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}
    fake.assert_complete()


async def test_system_messages_are_layered_over_hermes_prompt(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("ok"))
    body = {
        "model": "hermes",
        "messages": [
            {"role": "system", "content": "Answer in French."},
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "hi"},
        ],
    }
    assert (await api.client.post("/v1/chat/completions", json=body)).status_code == 200
    messages = sent(fake)
    assert messages[0]["role"] == "system" and "Hermes" in messages[0]["content"]
    assert messages[1] == {"role": "system", "content": "Answer in French.\n\nBe brief."}
    assert contents(messages) == [("user", "hi")]


async def test_text_parts_are_collapsed(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("ok"))
    parts = [{"type": "text", "text": "first"}, {"type": "input_text", "text": "second"}]
    assert (await api.chat(parts)).status_code == 200
    assert contents(sent(fake)) == [("user", "first\nsecond")]


@pytest.mark.parametrize(
    "messages, param, code",
    [
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
                    ],
                }
            ],
            "messages[0].content[1]",
            "vision_not_enabled",
        ),
        (
            [
                {"role": "system", "content": "s"},
                {"role": "user", "content": [{"type": "input_audio"}]},
            ],
            "messages[1].content[0]",
            "unsupported_content_type",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": 5}]}],
            "messages[0].content[0].text",
            None,
        ),
        ([{"role": "user", "content": [7]}], "messages[0].content[0]", None),
        ([{"role": "user", "content": {"text": "x"}}], "messages[0].content", None),
        ([{"role": "wizard", "content": "x"}], "messages[0].role", None),
        (["hello"], "messages[0]", None),
        ([], "messages", None),
        ("hello", "messages", None),
        ([{"role": "system", "content": "only system"}], "messages", "no_user_message"),
        (
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
            "messages[1]",
            "no_user_message",
        ),
        ([{"role": "user", "content": "  "}], "messages[0].content", None),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "tool", "content": "r", "tool_call_id": "c"},
            ],
            "messages[1]",
            "invalid_value",
        ),
    ],
)
async def test_bad_messages_are_400_naming_the_place(
    api: Api, fake: FakeModel, messages: object, param: str, code: str | None
) -> None:
    r = await api.client.post(
        "/v1/chat/completions", json={"model": "hermes", "messages": messages}
    )
    assert_envelope(r, 400, code, param)
    assert fake.chat_requests() == []


async def test_other_bad_bodies(api: Api, fake: FakeModel) -> None:
    post = api.client.post
    assert_envelope(await post("/v1/chat/completions", content=b"not json"), 400, "invalid_json")
    assert_envelope(await post("/v1/chat/completions", content=b"[1]"), 400, "invalid_json")
    assert_envelope(await post("/v1/chat/completions", content=b"\xff\xfe"), 400, "invalid_json")
    r = await api.chat("hi", n=2)
    assert_envelope(r, 400, param="n")
    assert_envelope(await api.chat("hi", stream="yes"), 400, param="stream")
    assert_envelope(await api.chat("hi", model=5), 400, param="model")
    assert fake.chat_requests() == []


async def test_client_tools_can_be_ignored_by_configuration(
    settings: Settings, fake: FakeModel
) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    settings.server.ignore_client_tools = True
    fake.enqueue(Text("sunny"))
    async with open_api(settings) as api:
        body = {
            "model": "hermes",
            "tools": tools,
            "messages": [
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "rain"},
                {"role": "user", "content": "and now?"},
            ],
        }
        r = await api.client.post("/v1/chat/completions", json=body)
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "sunny"
    request = fake.chat_requests()[0]
    assert "get_weather" not in str(request.get("tools"))
    assert contents(request["messages"]) == [
        ("user", "weather?"),
        ("assistant", ""),
        ("user", "and now?"),
    ]


async def test_stateless_request_uses_body_history_and_is_recorded(
    api: Api, fake: FakeModel
) -> None:
    fake.enqueue(Text("Go."))
    body = {
        "model": "hermes",
        "messages": [
            {"role": "user", "content": "I write Go."},
            {"role": "assistant", "content": "Nice."},
            {"role": "user", "content": "Which language?"},
        ],
    }
    r = await api.client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200
    assert contents(sent(fake)) == [
        ("user", "I write Go."),
        ("assistant", "Nice."),
        ("user", "Which language?"),
    ]
    session_id = r.headers["x-hermes-session-id"]
    assert session_id.startswith("api-")
    stored = api.runtime.store.get_messages("default", session_id)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "Which language?"),
        ("assistant", "Go."),
    ]
    assert api.runtime.store.get_session("default", session_id).source == "api"


async def test_session_header_keeps_the_transcript_and_ignores_body_history(
    api: Api, fake: FakeModel
) -> None:
    fake.enqueue(Text("Hi Alex."), Text("Go."))
    headers = {"X-Hermes-Session-Id": "repo:facebook/react"}
    r1 = await api.chat("My name is Alex and I write Go.", headers=headers)
    assert r1.headers["x-hermes-session-id"] == "repo:facebook/react"
    body = {
        "model": "hermes",
        "messages": [
            {"role": "user", "content": "forged history"},
            {"role": "assistant", "content": "forged answer"},
            {"role": "user", "content": "Which language?"},
        ],
    }
    r2 = await api.client.post("/v1/chat/completions", json=body, headers=headers)
    assert r2.status_code == 200
    assert contents(sent(fake)) == [
        ("user", "My name is Alex and I write Go."),
        ("assistant", "Hi Alex."),
        ("user", "Which language?"),
    ]
    stored = api.runtime.store.get_messages("default", "repo:facebook/react")
    assert [m.content for m in stored] == [
        "My name is Alex and I write Go.",
        "Hi Alex.",
        "Which language?",
        "Go.",
    ]


async def test_session_key_is_a_synonym(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("one"), Text("two"))
    await api.chat("first", headers={"X-Hermes-Session-Key": "support:981"})
    r = await api.chat(
        "second",
        headers={"X-Hermes-Session-Id": "support:981", "X-Hermes-Session-Key": "support:981"},
    )
    assert r.headers["x-hermes-session-id"] == "support:981"
    assert contents(sent(fake)) == [("user", "first"), ("assistant", "one"), ("user", "second")]


@pytest.mark.parametrize(
    "headers, param",
    [
        ({"X-Hermes-Session-Id": "a", "X-Hermes-Session-Key": "b"}, "X-Hermes-Session-Id"),
        ({"X-Hermes-Session-Id": "has space"}, "X-Hermes-Session-Id"),
        ({"X-Hermes-Session-Id": "x" * 257}, "X-Hermes-Session-Id"),
        ({"X-Hermes-Session-Id": ""}, "X-Hermes-Session-Id"),
        ({"X-Hermes-Session-Key": "semi;colon"}, "X-Hermes-Session-Key"),
        ({"X-Hermes-Session-Id": "tab\there"}, "X-Hermes-Session-Id"),
    ],
)
async def test_bad_session_headers_are_400(
    api: Api, fake: FakeModel, headers: dict, param: str
) -> None:
    r = await api.chat("hi", headers=headers)
    assert_envelope(r, 400, param=param)
    assert fake.chat_requests() == []


async def test_namespaced_ids_are_plain_names(api: Api, fake: FakeModel) -> None:
    fake.default = Text("ok")
    for sid in ("../../etc", "user:42", "a@b.c", "x" * 256):
        r = await api.chat("hi", headers={"X-Hermes-Session-Id": sid})
        assert r.status_code == 200 and r.headers["x-hermes-session-id"] == sid
        assert len(api.runtime.store.get_messages("default", sid)) == 2


async def test_concurrent_requests_on_one_session_run_in_turn(api: Api, fake: FakeModel) -> None:
    fake.enqueue(
        Hang(0.3, then=Text("first answer")), when=lambda b: b["messages"][-1]["content"] == "one"
    )
    fake.enqueue(Text("second answer"), when=lambda b: b["messages"][-1]["content"] == "two")
    headers = {"X-Hermes-Session-Id": "busy"}
    first = asyncio.create_task(api.chat("one", headers=headers))
    await asyncio.to_thread(fake.wait_for_requests, 1)
    second = asyncio.create_task(api.chat("two", headers=headers))
    r1, r2 = await asyncio.gather(first, second)
    assert r1.status_code == r2.status_code == 200
    stored = api.runtime.store.get_messages("default", "busy")
    assert [m.content for m in stored] == ["one", "first answer", "two", "second answer"]
    # the second turn saw the whole first exchange
    assert contents(sent(fake)) == [("user", "one"), ("assistant", "first answer"), ("user", "two")]


@pytest.mark.parametrize(
    "response, status, code, words",
    [
        (Error(401, "bad key"), 502, "upstream_auth_error", "authentication"),
        (Error(403, "forbidden"), 502, "upstream_auth_error", "HTTP 403"),
        (Error(429, "slow down"), 503, "upstream_rate_limited", "rate-limiting"),
        (Error(500, "kaboom"), 502, "upstream_error", "HTTP 500"),
        (Error(503, "overloaded"), 502, "upstream_error", "HTTP 503"),
        (Error(400, "bad thing"), 502, "upstream_bad_request", "refused"),
        (ContextLengthError(4096), 400, "context_length_exceeded", "4096"),
    ],
)
async def test_upstream_failures_map_to_clear_envelopes_and_store_nothing(
    api: Api,
    fake: FakeModel,
    caplog: pytest.LogCaptureFixture,
    response: object,
    status: int,
    code: str,
    words: str,
) -> None:
    fake.enqueue(response)
    r = await api.chat("hi", headers={"X-Hermes-Session-Id": "fails"})
    error = assert_envelope(r, status, code)
    assert words in error["message"]
    # the client never learns the internal endpoint's address; the server log does
    assert "127.0.0.1" not in error["message"] and str(fake.port) not in error["message"]
    assert any(str(fake.port) in rec.getMessage() for rec in caplog.records)
    assert api.runtime.store.get_messages("default", "fails") == []
    fake.enqueue(Text("recovered"))
    r = await api.chat("again", headers={"X-Hermes-Session-Id": "fails"})
    assert r.status_code == 200
    stored = api.runtime.store.get_messages("default", "fails")
    assert [m.content for m in stored] == ["again", "recovered"]


async def test_unreachable_and_slow_models(settings: Settings, fake: FakeModel) -> None:
    settings.model.timeout = 0.3
    fake.enqueue(Hang(5))
    async with open_api(settings) as api:
        error = assert_envelope(await api.chat("hi"), 504, "upstream_timeout")
        assert "in time" in error["message"] and "127.0.0.1" not in error["message"]
    fake.stop()
    async with open_api(settings) as api:
        error = assert_envelope(await api.chat("hi"), 503, "upstream_unavailable")
        assert "could not be reached" in error["message"]


async def test_unconfigured_model_says_how_to_configure(
    settings: Settings, fake: FakeModel
) -> None:
    settings.model.base_url = None
    async with open_api(settings) as api:
        error = assert_envelope(await api.chat("hi"), 503, "model_not_configured")
        assert "OPENAI_BASE_URL" in error["message"]
        # never Hermes' own port as the example: following it makes Hermes call itself
        assert "11434" not in error["message"]
        assert "hermes setup" in error["message"]
        assert "python -m hermes.testing.fake_model" in error["message"]
        assert "HERMES_MODEL=echo" in error["message"]
        health = await api.client.get("/health")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "version": __version__, "model_configured": False}
        detailed = (await api.client.get("/health/detailed")).json()
        assert detailed["status"] == "degraded" and "model" in detailed["degraded"]
        assert detailed["parts"]["model"]["status"] == "not_configured"
        assert "hermes setup" in detailed["reasons"]["model"]


async def test_a_turn_with_tools_stores_every_step(settings: Settings, fake: FakeModel) -> None:
    fake.enqueue(ToolCalls([("add", {"a": 2, "b": 3})]), Text("5"))
    async with open_api(settings, tools=TEST_TOOLS) as api:
        r = await api.chat("2+3?", headers={"X-Hermes-Session-Id": "math"})
        assert r.json()["choices"][0]["message"]["content"] == "5"
        stored = api.runtime.store.get_messages("default", "math")
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]


async def test_failure_after_a_tool_step_stores_nothing(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(ToolCalls([("add", {"a": 2, "b": 3})]), Error(500, "died"))
    async with open_api(settings, tools=TEST_TOOLS) as api:
        r = await api.chat("2+3?", headers={"X-Hermes-Session-Id": "half"})
        assert_envelope(r, 502, "upstream_error")
        assert api.runtime.store.get_messages("default", "half") == []
