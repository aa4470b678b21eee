"""pydantic-ai: function tools, tool output (its default structured output: a tool the model
must call) and native output (`response_format`), on the Chat and Responses models."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import pytest
from openai import AsyncOpenAI

from hermes.testing.fake_model import Text, ToolCalls
from tests.compat.conftest import Hermes


@pytest.fixture(scope="module")
def sdk() -> ModuleType:
    return importlib.import_module("tests.compat.pydantic_ai_parts")


@pytest.fixture
async def provider(hermes: Hermes, sdk: ModuleType) -> AsyncIterator[Any]:
    client = AsyncOpenAI(base_url=hermes.base_url, api_key="hermes")
    yield sdk.OpenAIProvider(openai_client=client)
    await client.close()


@pytest.mark.parametrize("model", ["chat", "responses"])
async def test_tools(hermes: Hermes, sdk: ModuleType, provider: Any, model: str) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]), Text("Rainy in Oslo."))
    agent = sdk.Agent(sdk.MODELS[model]("hermes", provider=provider), instructions="Be brief.")

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return f"rain in {city}"

    result = await agent.run("Weather in Oslo?")
    assert result.output == "Rainy in Oslo."
    last = hermes.fake.chat_requests()[1]["messages"][-1]
    assert last["role"] == "tool" and last["content"] == "rain in Oslo"


async def test_tool_output(hermes: Hermes, sdk: ModuleType, provider: Any) -> None:
    hermes.fake.enqueue(ToolCalls([("final_result", {"name": "Lyon", "country": "France"})]))
    agent = sdk.Agent(sdk.MODELS["chat"]("hermes", provider=provider), output_type=sdk.City)
    result = await agent.run("A French city")
    assert result.output == sdk.City(name="Lyon", country="France")
    assert hermes.fake.chat_requests()[0]["tool_choice"] == "required"


@pytest.mark.parametrize("model", ["chat", "responses"])
async def test_native_output(hermes: Hermes, sdk: ModuleType, provider: Any, model: str) -> None:
    hermes.fake.enqueue(Text('{"name": "Nice", "country": "France"}'))
    agent = sdk.Agent(
        sdk.MODELS[model]("hermes", provider=provider), output_type=sdk.NativeOutput(sdk.City)
    )
    result = await agent.run("Another French city")
    assert result.output == sdk.City(name="Nice", country="France")
    assert hermes.fake.chat_requests()[0]["response_format"]["type"] == "json_schema"
