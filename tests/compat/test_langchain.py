"""LangChain's ChatOpenAI: invoke, stream, a bind_tools agent loop, with_structured_output."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from hermes.testing.fake_model import Text, ToolCalls
from tests.compat.conftest import Hermes


@tool
def get_weather(city: str) -> str:
    """Weather in a city."""
    return f"rain in {city}"


class City(BaseModel):
    """A city and its country."""

    name: str
    country: str


def _llm(hermes: Hermes, **kw: object) -> ChatOpenAI:
    return ChatOpenAI(model="hermes", base_url=hermes.base_url, api_key="hermes", **kw)  # type: ignore[arg-type]


def test_invoke_and_stream(hermes: Hermes) -> None:
    hermes.fake.enqueue(
        Text("Hello!"), ToolCalls([("add", {"a": 1, "b": 1})]), Text("two", chunk_chars=1)
    )
    llm = _llm(hermes, temperature=0.2, max_tokens=100)
    assert llm.invoke("hi").content == "Hello!"
    streamed = "".join(str(chunk.content) for chunk in llm.stream("1+1"))
    assert streamed == "two"
    first = hermes.fake.chat_requests()[0]
    # langchain-openai sends max_tokens as max_completion_tokens; Hermes passes it on as sent
    assert (first["temperature"], first["max_completion_tokens"]) == (0.2, 100)


def test_bind_tools_agent_loop(hermes: Hermes) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]), Text("It rains in Oslo."))
    llm = _llm(hermes).bind_tools([get_weather])
    messages: list = [HumanMessage("Weather in Oslo?")]
    while True:
        reply = llm.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            result = get_weather.invoke(call["args"])
            messages.append(ToolMessage(result, tool_call_id=call["id"]))
    assert reply.content == "It rains in Oslo."
    sent = hermes.fake.chat_requests()[1]["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["content"] == "rain in Oslo"
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_with_structured_output(hermes: Hermes) -> None:
    hermes.fake.enqueue(Text('{"name": "Lyon", "country": "France"}'))
    hermes.fake.enqueue(ToolCalls([("City", {"name": "Nice", "country": "France"})]))
    structured = _llm(hermes).with_structured_output(City)
    assert structured.invoke("A French city") == City(name="Lyon", country="France")
    assert hermes.fake.chat_requests()[0]["response_format"]["type"] == "json_schema"
    by_tool = _llm(hermes).with_structured_output(City, method="function_calling")
    assert by_tool.invoke("Another") == City(name="Nice", country="France")
    assert hermes.fake.chat_requests()[1]["tool_choice"]["function"]["name"] == "City"
