"""pydantic-ai: function tools, tool output (its default structured output: a tool the model
must call) and native output (`response_format`), on the Chat and Responses models."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from hermes.testing.fake_model import Text, ToolCalls
from tests.compat.conftest import Hermes


class City(BaseModel):
    name: str
    country: str


@pytest.fixture
async def provider(hermes: Hermes) -> AsyncIterator[OpenAIProvider]:
    client = AsyncOpenAI(base_url=hermes.base_url, api_key="hermes")
    yield OpenAIProvider(openai_client=client)
    await client.close()


@pytest.mark.parametrize("model_class", [OpenAIChatModel, OpenAIResponsesModel])
async def test_tools(hermes: Hermes, provider: OpenAIProvider, model_class: type) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]), Text("Rainy in Oslo."))
    agent = Agent(model_class("hermes", provider=provider), instructions="Be brief.")

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return f"rain in {city}"

    result = await agent.run("Weather in Oslo?")
    assert result.output == "Rainy in Oslo."
    last = hermes.fake.chat_requests()[1]["messages"][-1]
    assert last["role"] == "tool" and last["content"] == "rain in Oslo"


async def test_tool_output(hermes: Hermes, provider: OpenAIProvider) -> None:
    hermes.fake.enqueue(ToolCalls([("final_result", {"name": "Lyon", "country": "France"})]))
    agent = Agent(OpenAIChatModel("hermes", provider=provider), output_type=City)
    result = await agent.run("A French city")
    assert result.output == City(name="Lyon", country="France")
    assert hermes.fake.chat_requests()[0]["tool_choice"] == "required"


@pytest.mark.parametrize("model_class", [OpenAIChatModel, OpenAIResponsesModel])
async def test_native_output(hermes: Hermes, provider: OpenAIProvider, model_class: type) -> None:
    hermes.fake.enqueue(Text('{"name": "Nice", "country": "France"}'))
    agent = Agent(model_class("hermes", provider=provider), output_type=NativeOutput(City))
    result = await agent.run("Another French city")
    assert result.output == City(name="Nice", country="France")
    assert hermes.fake.chat_requests()[0]["response_format"]["type"] == "json_schema"
