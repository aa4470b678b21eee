"""How an endpoint's `GET /models` entry says its model sees images, in the words different
servers use (`hermes.models.vision.sees_images`)."""

from __future__ import annotations

from typing import Any

import pytest

from hermes.models.vision import sees_images


@pytest.mark.parametrize(
    "entry, sees",
    [
        ({"id": "m", "architecture": {"input_modalities": ["text", "image"]}}, True),  # OpenRouter
        ({"id": "m", "architecture": {"input_modalities": ["text"]}}, False),
        ({"id": "m", "input_modalities": ["image", "text"]}, True),
        ({"id": "m", "modalities": {"input": ["text", "image"], "output": ["text"]}}, True),
        ({"id": "m", "capabilities": ["completion", "vision"]}, True),  # Ollama's words
        ({"id": "m", "capabilities": {"vision": True}}, True),
        ({"id": "m", "capabilities": {"vision": "yes"}}, False),
        ({"id": "m", "type": "vlm"}, True),  # LM Studio
        ({"id": "m", "type": "llm"}, False),
        ({"id": "m", "context_length": 8192}, False),
        ({"id": "m", "architecture": "transformer", "modalities": ["image"]}, False),
    ],
)
def test_model_entries_that_say_they_see(entry: dict[str, Any], sees: bool) -> None:
    assert sees_images(entry) is sees
