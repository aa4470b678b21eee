"""The OpenAI Agents SDK: its default Responses model and its Chat Completions model, with
function tools and a structured `output_type`."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from types import ModuleType

import pytest
from openai import AsyncOpenAI

from hermes.testing.fake_model import Text, ToolCalls
from tests.compat.conftest import Hermes


@pytest.fixture(scope="module")
def sdk() -> ModuleType:
    return importlib.import_module("tests.compat.agents_parts")


@pytest.fixture(autouse=True)
def no_tracing(sdk: ModuleType) -> None:
    sdk.set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI


@pytest.fixture
async def models(hermes: Hermes, sdk: ModuleType) -> AsyncIterator[dict[str, object]]:
    client = AsyncOpenAI(base_url=hermes.base_url, api_key="hermes")
    yield {
        "responses": sdk.OpenAIResponsesModel(model="hermes", openai_client=client),
        "chat": sdk.OpenAIChatCompletionsModel(model="hermes", openai_client=client),
    }
    await client.close()


@pytest.mark.parametrize("kind", ["responses", "chat"])
async def test_function_tool_agent(
    hermes: Hermes, sdk: ModuleType, models: dict[str, object], kind: str
) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]), Text("It rains in Oslo."))
    agent = sdk.Agent(
        name="weather",
        instructions="Answer briefly.",
        tools=[sdk.get_weather],
        model=models[kind],
    )
    result = await sdk.Runner.run(agent, "Weather in Oslo?")
    assert result.final_output == "It rains in Oslo."
    first, second = hermes.fake.chat_requests()
    assert {"role": "system", "content": "Answer briefly."} in first["messages"]
    assert "get_weather" in {t["function"]["name"] for t in first["tools"]}
    assert second["messages"][-1]["role"] == "tool"
    assert second["messages"][-1]["content"] == "rain in Oslo"


@pytest.mark.parametrize("kind", ["responses", "chat"])
async def test_output_type(
    hermes: Hermes, sdk: ModuleType, models: dict[str, object], kind: str
) -> None:
    hermes.fake.enqueue(Text('{"name": "Lyon", "country": "France"}'))
    agent = sdk.Agent(name="cities", output_type=sdk.City, model=models[kind])
    result = await sdk.Runner.run(agent, "A French city")
    assert result.final_output == sdk.City(name="Lyon", country="France")
    fmt = hermes.fake.chat_requests()[0]["response_format"]
    assert fmt["type"] == "json_schema" and "name" in fmt["json_schema"]["schema"]["properties"]
