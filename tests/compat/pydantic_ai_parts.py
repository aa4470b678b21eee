"""What the pydantic-ai tests use, imported when a test asks for it (the `sdk` fixture of
test_pydantic_ai.py) rather than by every test worker at collection."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

__all__ = ["MODELS", "Agent", "City", "NativeOutput", "OpenAIProvider"]

MODELS = {"chat": OpenAIChatModel, "responses": OpenAIResponsesModel}


class City(BaseModel):
    name: str
    country: str
