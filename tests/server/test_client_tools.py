"""Request options and client-side tools on /v1/chat/completions, as OpenAI clients use them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes import tls
from hermes.agent.client_tools import MISSING_RESULT
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.server.conftest import TEST_TOOLS, Api, chunks, open_api, open_socket_api
from tests.server.test_basics import assert_envelope

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
SESSION = {"X-Hermes-Session-Id": "tools-1"}


@pytest.fixture
async def tool_api(settings: Settings) -> Any:
    async with open_api(settings, tools=TEST_TOOLS) as api:
        yield api


def _post(
    api: Api, messages: list[dict[str, Any]], headers: dict[str, str] | None = None, **kw: Any
) -> Any:
    body = {"model": "hermes", "messages": messages, **kw}
    return api.client.post("/v1/chat/completions", json=body, headers=headers or {})


async def test_sampling_options_and_response_format_reach_every_model_call(
    tool_api: Api, fake: FakeModel
) -> None:
    fake.enqueue(ToolCalls([("add", {"a": 1, "b": 2})]), Text('{"answer": 3}'))
    options = {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_completion_tokens": 300,
        "stop": ["END"],
        "seed": 7,
        "frequency_penalty": 0.1,
        "presence_penalty": 0.3,
        "reasoning_effort": "low",
        "user": "u-42",
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "a", "schema": {"type": "object"}},
        },
    }
    r = await _post(
        tool_api,
        [{"role": "user", "content": "1+2"}],
        store=True,
        metadata={"k": "v"},
        logprobs=False,
        **options,
    )
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == '{"answer": 3}'
    sent = fake.chat_requests()
    assert len(sent) == 2
    for request in sent:
        assert {k: request.get(k) for k in options} == options
        # bookkeeping fields concern OpenAI's platform only and are not forwarded
        assert "store" not in request and "metadata" not in request and "logprobs" not in request


@pytest.mark.parametrize(
    "extra, param, code",
    [
        ({"frobnicate": 1, "zzz": 2}, "frobnicate", "unknown_parameter"),
        ({"logprobs": True}, "logprobs", "unsupported_parameter"),
        ({"functions": [{"name": "f"}]}, "functions", "unsupported_parameter"),
        ({"modalities": ["text", "audio"]}, "modalities", "unsupported_parameter"),
        ({"response_format": {"type": "yaml"}}, "response_format", "invalid_value"),
        ({"tools": [{"type": "web_search"}]}, "tools[0]", "unsupported_tool_type"),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "x"}}},
            "tool_choice",
            "invalid_value",
        ),
        ({"tools": [WEATHER, WEATHER]}, "tools", "invalid_value"),
        ({"tool_choice": "sometimes"}, "tool_choice", "invalid_value"),
    ],
)
async def test_parameters_hermes_cannot_honour_are_400_naming_them(
    tool_api: Api, fake: FakeModel, extra: dict[str, Any], param: str, code: str
) -> None:
    r = await _post(tool_api, [{"role": "user", "content": "hi"}], **extra)
    error = assert_envelope(r, 400, code, param)
    assert param.split("[")[0] in error["message"]
    if code == "unknown_parameter":
        assert "zzz" in error["message"]
    assert fake.chat_requests() == []


async def test_a_client_tool_that_clashes_with_a_hermes_tool_is_refused(
    tool_api: Api, fake: FakeModel
) -> None:
    clash = {"type": "function", "function": {"name": "add", "parameters": {}}}
    r = await _post(tool_api, [{"role": "user", "content": "hi"}], tools=[clash])
    error = assert_envelope(r, 400, "invalid_tool_traffic", "tools")
    assert "add" in error["message"]
    assert fake.chat_requests() == []


async def test_client_tool_pauses_the_turn_and_results_resume_it_in_the_session(
    tool_api: Api, fake: FakeModel
) -> None:
    fake.enqueue(
        ToolCalls([("add", {"a": 2, "b": 2})]),
        ToolCalls([("get_weather", {"city": "Oslo"})], content="Checking."),
        Text("It rains in Oslo; 2+2 is 4."),
    )
    question = [{"role": "user", "content": "weather in Oslo, and 2+2?"}]
    r = await _post(tool_api, question, SESSION, tools=[WEATHER])
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Checking."
    calls = choice["message"]["tool_calls"]
    assert [(c["type"], c["function"]["name"]) for c in calls] == [("function", "get_weather")]
    assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Oslo"}
    # Hermes' own step stays server-side (quoted: a random hex id may hold the letters "add")
    assert '"add"' not in r.text
    # the model was offered both kinds of tools
    offered = {t["function"]["name"] for t in fake.chat_requests()[0]["tools"]}
    assert {"add", "get_weather"} <= offered

    results = [
        *question,
        choice["message"],
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "rain, 9°C"},
    ]
    r = await _post(tool_api, results, SESSION, tools=[WEATHER])
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "It rains in Oslo; 2+2 is 4."
    assert r.json()["choices"][0]["finish_reason"] == "stop"
    resumed = fake.chat_requests()[2]["messages"]
    assert [m["role"] for m in resumed if m["role"] != "system"] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert resumed[-1] == {"role": "tool", "tool_call_id": calls[0]["id"], "content": "rain, 9°C"}
    stored = tool_api.runtime.store.get_messages("default", "tools-1")
    assert [m.role for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert stored[4].tool_name == "get_weather" and stored[4].content == "rain, 9°C"


async def test_stateless_client_tool_round_trip_works_from_the_messages(
    tool_api: Api, fake: FakeModel
) -> None:
    fake.enqueue(ToolCalls([("get_weather", {"city": "Rome"})]), Text("Sunny in Rome."))
    question = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Rome?"}]
    r = await _post(tool_api, question, tools=[WEATHER], tool_choice="required")
    message = r.json()["choices"][0]["message"]
    assert message["content"] is None and len(message["tool_calls"]) == 1
    call_id = message["tool_calls"][0]["id"]
    follow_up = [*question, message, {"role": "tool", "tool_call_id": call_id, "content": "sun"}]
    r = await _post(tool_api, follow_up, tools=[WEATHER])
    assert r.json()["choices"][0]["message"]["content"] == "Sunny in Rome."
    first, second = fake.chat_requests()
    assert first["tool_choice"] == "required"
    assert "tool_choice" not in second
    assert [m["role"] for m in second["messages"][-3:]] == ["user", "assistant", "tool"]
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "get_weather"


async def test_tool_choice_reaches_the_model_and_none_disables_tools(
    tool_api: Api, fake: FakeModel
) -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    fake.enqueue(ToolCalls([("get_weather", {"city": "Pau"})]), Text("plain"))
    await _post(tool_api, [{"role": "user", "content": "a"}], tools=[WEATHER], tool_choice=named)
    await _post(
        tool_api,
        [{"role": "user", "content": "b"}],
        tools=[WEATHER],
        tool_choice="none",
        parallel_tool_calls=False,
    )
    first, second = fake.chat_requests()
    assert first["tool_choice"] == named
    assert second["tool_choice"] == "none" and second["parallel_tool_calls"] is False


async def test_results_for_unknown_calls_are_refused_and_unanswered_calls_are_closed(
    tool_api: Api, fake: FakeModel
) -> None:
    fake.enqueue(ToolCalls([("get_weather", {"city": "Nice"})]))
    question = [{"role": "user", "content": "Nice?"}]
    r = await _post(tool_api, question, SESSION, tools=[WEATHER])
    message = r.json()["choices"][0]["message"]
    wrong = [*question, message, {"role": "tool", "tool_call_id": "call_zzz", "content": "x"}]
    r = await _post(tool_api, wrong, SESSION, tools=[WEATHER])
    assert "call_zzz" in assert_envelope(r, 400, "invalid_tool_traffic", "messages")["message"]
    # the client gives up on the call and asks something else: the call is closed for the model
    fake.enqueue(Text("ok"))
    r = await _post(tool_api, [{"role": "user", "content": "never mind"}], SESSION, tools=[WEATHER])
    assert r.json()["choices"][0]["message"]["content"] == "ok"
    sent = fake.chat_requests()[-1]["messages"]
    assert sent[-2] == {
        "role": "tool",
        "tool_call_id": message["tool_calls"][0]["id"],
        "content": MISSING_RESULT,
    }
    stored = tool_api.runtime.store.get_messages("default", "tools-1")
    assert [m.role for m in stored] == ["user", "assistant", "tool", "user", "assistant"]


async def test_streamed_pause_hands_back_tool_calls_through_the_openai_sdk(
    settings: Settings, fake: FakeModel
) -> None:
    import openai

    fake.enqueue(
        ToolCalls([("add", {"a": 1, "b": 1})]),
        ToolCalls([("get_weather", {"city": "Lima"})], content="One moment."),
    )
    async with open_socket_api(settings, tools=TEST_TOOLS) as (base, _):
        client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="hermes", max_retries=0)
        try:
            stream = await client.chat.completions.create(
                model="hermes",
                messages=[{"role": "user", "content": "Lima?"}],
                tools=[WEATHER],  # type: ignore[list-item]
                stream=True,
            )
            text, names, finish = "", [], None
            async for chunk in stream:
                delta = chunk.choices[0].delta
                text += delta.content or ""
                names += [c.function.name for c in delta.tool_calls or [] if c.function]
                finish = chunk.choices[0].finish_reason or finish
        finally:
            await client.close()
    assert (text, names, finish) == ("One moment.", ["get_weather"], "tool_calls")


async def test_streamed_pause_frames(settings: Settings, fake: FakeModel) -> None:
    import httpx

    fake.enqueue(ToolCalls([("get_weather", {"city": "Lima"})]))
    async with open_socket_api(settings, tools=TEST_TOOLS) as (base, _):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, timeout=10
        ) as client:
            body = {
                "model": "hermes",
                "stream": True,
                "tools": [WEATHER],
                "messages": [{"role": "user", "content": "Lima?"}],
            }
            r = await client.post("/v1/chat/completions", json=body)
    got = chunks(r.text)
    calls = [c for c in got if c["choices"][0]["delta"].get("tool_calls")]
    assert len(calls) == 1
    call = calls[0]["choices"][0]["delta"]["tool_calls"][0]
    assert call["index"] == 0 and call["function"]["name"] == "get_weather"
    assert got[-1]["choices"][0]["finish_reason"] == "tool_calls" and got[-1]["usage"]


async def test_a_forcing_tool_choice_holds_only_until_a_tool_was_called(
    tool_api: Api, fake: FakeModel
) -> None:
    fake.enqueue(ToolCalls([("add", {"a": 1, "b": 2})]), Text("3"))
    r = await _post(
        tool_api, [{"role": "user", "content": "1+2"}], tools=[WEATHER], tool_choice="required"
    )
    assert r.json()["choices"][0]["message"]["content"] == "3"
    first, second = fake.chat_requests()
    assert first["tool_choice"] == "required" and "tool_choice" not in second


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
async def test_a_forcing_tool_choice_applies_to_the_callers_tools(
    tool_api: Api, fake: FakeModel, choice: Any
) -> None:
    """Issue 33: with Hermes' own tools offered too, "required" could be met by one of them
    and the caller never got the call it demanded. The forced call offers the caller's only."""
    fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]))
    r = await _post(
        tool_api, [{"role": "user", "content": "Oslo?"}], tools=[WEATHER], tool_choice=choice
    )
    assert r.json()["choices"][0]["finish_reason"] == "tool_calls"
    (forced,) = fake.chat_requests()
    assert [t["function"]["name"] for t in forced["tools"]] == ["get_weather"]
    assert forced["tool_choice"] == choice
    fake.enqueue(Text("fine"))
    await _post(tool_api, [{"role": "user", "content": "hi"}], tools=[WEATHER], tool_choice="auto")
    offered = {t["function"]["name"] for t in fake.chat_requests()[-1]["tools"]}
    assert {"get_weather", "add"} <= offered  # not forced: Hermes' own tools next to the caller's
