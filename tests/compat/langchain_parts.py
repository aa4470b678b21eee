"""What the LangChain tests use, imported when a test asks for it (the `lc` fixture of
test_langchain.py) rather than by every test worker at collection."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

__all__ = ["ChatOpenAI", "City", "HumanMessage", "ToolMessage", "get_weather"]


@tool
def get_weather(city: str) -> str:
    """Weather in a city."""
    return f"rain in {city}"


class City(BaseModel):
    """A city and its country."""

    name: str
    country: str
