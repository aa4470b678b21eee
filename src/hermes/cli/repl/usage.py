"""`/usage`: tokens this session and this chat, how full the context is, and the cost."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from hermes.cli.repl.session import ChatSession
from hermes.models.errors import ModelError
from hermes.models.types import Usage

PER_MILLION = 1_000_000


async def endpoint_models(chat: ChatSession) -> list[dict[str, Any]]:
    """The endpoint's model list, asked once per chat ([] when it does not answer)."""
    cached = chat.cache.get("models")
    if isinstance(cached, list):
        return cached
    try:
        models = await chat.runtime.model.list_models()
    except ModelError:
        models = []
    chat.cache["models"] = models
    return models


async def prices(chat: ChatSession) -> tuple[float, float, str] | None:
    """USD per million (input, output) tokens and where that came from, if anyone says."""
    settings = chat.runtime.settings.model
    if settings.pricing is not None:
        return settings.pricing.input, settings.pricing.output, "model.pricing"
    name = chat.runtime.model.model
    for entry in await endpoint_models(chat):
        pricing = entry.get("pricing")
        if entry.get("id") == name and isinstance(pricing, dict):
            try:
                return (
                    float(pricing["prompt"]) * PER_MILLION,
                    float(pricing["completion"]) * PER_MILLION,
                    "the endpoint's model list",
                )
            except (KeyError, TypeError, ValueError):
                return None
    return None


def _cost(prompt: int, completion: int, price: tuple[float, float, str] | None) -> str:
    if price is None:
        return ""
    dollars = (prompt * price[0] + completion * price[1]) / PER_MILLION
    return f" · ${dollars:,.4f}"


def by_model_lines(by_model: Mapping[str, Usage]) -> list[str]:
    """One line per model that answered, when more than one did (a fallback took over)."""
    if len(by_model) < 2:
        return []
    return [
        f"  {model}: {usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion"
        for model, usage in sorted(by_model.items())
    ]


async def usage_report(chat: ChatSession) -> list[str]:
    session = await asyncio.to_thread(chat.store.get_session, chat.scope, chat.session_id)
    price = await prices(chat)
    if session is None:
        return ["Nothing sent in this session yet."]
    lines = [
        f"session {session.id}: {session.input_tokens:,} prompt + "
        f"{session.output_tokens:,} completion tokens over {session.user_turns} turn(s)"
        + _cost(session.input_tokens, session.output_tokens, price),
        f"this chat: {chat.usage.prompt_tokens:,} prompt + {chat.usage.completion_tokens:,} "
        f"completion tokens over {chat.turns} turn(s)"
        + _cost(chat.usage.prompt_tokens, chat.usage.completion_tokens, price),
    ]
    lines.extend(by_model_lines(chat.usage_by_model()))
    if chat.undone.total_tokens or chat.undone.prompt_tokens:
        lines.append(
            f"taken back (/undo, /retry): {chat.undone.prompt_tokens:,} prompt + "
            f"{chat.undone.completion_tokens:,} completion tokens (spent, so still in the "
            "session's figures; no longer this chat's)"
        )
    window = getattr(chat.runtime.agent.policy, "context_window", None)
    if session.last_prompt_tokens and window is not None:
        size = await window()
        share = 100 * session.last_prompt_tokens / size
        stale = (
            " at the last call, before /undo; the next prompt leaves the undone turn out"
            if chat.undone_since_turn
            else ""
        )
        lines.append(
            f"context: {session.last_prompt_tokens:,} of {size:,} tokens ({share:.0f}%){stale}"
        )
    if price is None:
        lines.append(
            "cost: unknown for this model; set model.pricing.input/output (USD per million "
            "tokens) in config.yaml"
        )
    else:
        lines.append(
            f"prices: ${price[0]:g} in / ${price[1]:g} out per million tokens ({price[2]})"
        )
    return lines
