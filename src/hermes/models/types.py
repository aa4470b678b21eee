"""Wire-level value types shared by the model client and the agent loop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes.text import clean_surrogates


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by the model; `arguments` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str


def tool_calls_json(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """The calls as a Chat Completions assistant message carries them."""
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]


def tool_result(call_id: str, text: str) -> dict[str, Any]:
    """A tool's result as the Chat Completions message that answers call `call_id`."""
    return {"role": "tool", "tool_call_id": call_id, "content": text}


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(slots=True)
class Completion:
    """A finished model response (streamed or not), normalised."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""

    def __post_init__(self) -> None:
        # A reply with a lone surrogate (a broken `\ud800` escape upstream) cannot be stored
        # as UTF-8: it is cleaned here, for both paths, rather than fail the turn later.
        if self.content:
            self.content = clean_surrogates(self.content)
        if any(
            clean_surrogates(c.name + c.arguments) != c.name + c.arguments for c in self.tool_calls
        ):
            self.tool_calls = [
                ToolCall(c.id, clean_surrogates(c.name), clean_surrogates(c.arguments))
                for c in self.tool_calls
            ]

    def assistant_message(self) -> dict[str, Any]:
        """The reply as the assistant message that goes back with its tools' results."""
        return {
            "role": "assistant",
            "content": self.content,
            "tool_calls": tool_calls_json(self.tool_calls),
        }
