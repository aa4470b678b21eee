"""The OpenAI Agents SDK: its default Responses model and its Chat Completions model, with
function tools and a structured `output_type`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from pydantic import BaseModel

from hermes.testing.fake_model import Text, ToolCalls
from tests.compat.conftest import Hermes


@function_tool
def get_weather(city: str) -> str:
    """Weather in a city.

    Args:
        city: the city
    """
    return f"rain in {city}"


class City(BaseModel):
    name: str
    country: str


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI


@pytest.fixture
async def models(hermes: Hermes) -> AsyncIterator[dict[str, object]]:
    client = AsyncOpenAI(base_url=hermes.base_url, api_key="hermes")
    yield {
        "responses": OpenAIResponsesModel(model="hermes", openai_client=client),
        "chat": OpenAIChatCompletionsModel(model="hermes", openai_client=client),
    }
    await client.close()


@pytest.mark.parametrize("kind", ["responses", "chat"])
async def test_function_tool_agent(hermes: Hermes, models: dict[str, object], kind: str) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]), Text("It rains in Oslo."))
    agent = Agent(
        name="weather",
        instructions="Answer briefly.",
        tools=[get_weather],
        model=models[kind],  # type: ignore[arg-type]
    )
    result = await Runner.run(agent, "Weather in Oslo?")
    assert result.final_output == "It rains in Oslo."
    first, second = hermes.fake.chat_requests()
    assert {"role": "system", "content": "Answer briefly."} in first["messages"]
    assert "get_weather" in {t["function"]["name"] for t in first["tools"]}
    assert second["messages"][-1]["role"] == "tool"
    assert second["messages"][-1]["content"] == "rain in Oslo"


@pytest.mark.parametrize("kind", ["responses", "chat"])
async def test_output_type(hermes: Hermes, models: dict[str, object], kind: str) -> None:
    hermes.fake.enqueue(Text('{"name": "Lyon", "country": "France"}'))
    agent = Agent(name="cities", output_type=City, model=models[kind])  # type: ignore[arg-type]
    result = await Runner.run(agent, "A French city")
    assert result.final_output == City(name="Lyon", country="France")
    fmt = hermes.fake.chat_requests()[0]["response_format"]
    assert fmt["type"] == "json_schema" and "name" in fmt["json_schema"]["schema"]["properties"]
