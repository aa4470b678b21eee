"""The built-in model provider, registered as a plugin's would be: `openai`, any
OpenAI-compatible endpoint at `model.base_url` (OpenAI, OpenRouter, Ollama, vLLM, …)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.config.settings import Settings
from hermes.plugins import Registry

if TYPE_CHECKING:
    from hermes.models.client import ModelClient


def openai_compatible(settings: Settings, model: str | None = None) -> ModelClient:
    """The client for `model` (default `model.name`) at `model.base_url`."""
    from hermes.models.client import OpenAICompatClient

    api_key = settings.model.api_key.get_secret_value() if settings.model.api_key else None
    return OpenAICompatClient(
        base_url=settings.model.base_url,
        api_key=api_key,
        model=model or settings.model.name,
        timeout=settings.model.timeout,
        max_retries=settings.model.max_retries,
        total_timeout=settings.model.total_timeout,
    )


def register(hermes: Registry) -> None:
    hermes.model_provider("openai", openai_compatible)
