"""LangChain's ChatOpenAI: invoke, stream, a bind_tools agent loop, with_structured_output."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest

from hermes.testing.fake_model import Text, ToolCalls
from tests.compat.conftest import Hermes


@pytest.fixture(scope="module")
def lc() -> ModuleType:
    return importlib.import_module("tests.compat.langchain_parts")


def _llm(lc: ModuleType, hermes: Hermes, **kw: object) -> Any:
    return lc.ChatOpenAI(model="hermes", base_url=hermes.base_url, api_key="hermes", **kw)


def test_invoke_and_stream(hermes: Hermes, lc: ModuleType) -> None:
    hermes.fake.enqueue(
        Text("Hello!"), ToolCalls([("add", {"a": 1, "b": 1})]), Text("two", chunk_chars=1)
    )
    llm = _llm(lc, hermes, temperature=0.2, max_tokens=100)
    assert llm.invoke("hi").content == "Hello!"
    streamed = "".join(str(chunk.content) for chunk in llm.stream("1+1"))
    assert streamed == "two"
    first = hermes.fake.chat_requests()[0]
    # langchain-openai sends max_tokens as max_completion_tokens; Hermes passes it on as sent
    assert (first["temperature"], first["max_completion_tokens"]) == (0.2, 100)


def test_bind_tools_agent_loop(hermes: Hermes, lc: ModuleType) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]), Text("It rains in Oslo."))
    llm = _llm(lc, hermes).bind_tools([lc.get_weather])
    messages: list = [lc.HumanMessage("Weather in Oslo?")]
    while True:
        reply = llm.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            result = lc.get_weather.invoke(call["args"])
            messages.append(lc.ToolMessage(result, tool_call_id=call["id"]))
    assert reply.content == "It rains in Oslo."
    sent = hermes.fake.chat_requests()[1]["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["content"] == "rain in Oslo"
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_with_structured_output(hermes: Hermes, lc: ModuleType) -> None:
    hermes.fake.enqueue(Text('{"name": "Lyon", "country": "France"}'))
    hermes.fake.enqueue(ToolCalls([("City", {"name": "Nice", "country": "France"})]))
    structured = _llm(lc, hermes).with_structured_output(lc.City)
    assert structured.invoke("A French city") == lc.City(name="Lyon", country="France")
    assert hermes.fake.chat_requests()[0]["response_format"]["type"] == "json_schema"
    by_tool = _llm(lc, hermes).with_structured_output(lc.City, method="function_calling")
    assert by_tool.invoke("Another") == lc.City(name="Nice", country="France")
    assert hermes.fake.chat_requests()[1]["tool_choice"]["function"]["name"] == "City"
