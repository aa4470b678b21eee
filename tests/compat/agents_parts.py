"""What the OpenAI Agents SDK tests use, imported when a test asks for it (the `sdk` fixture
of test_openai_agents.py): the SDK takes seconds to import, which every test worker would
pay at collection."""

from __future__ import annotations

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from pydantic import BaseModel

__all__ = [
    "Agent",
    "City",
    "OpenAIChatCompletionsModel",
    "OpenAIResponsesModel",
    "Runner",
    "get_weather",
    "set_tracing_disabled",
]


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
