"""Tools the caller offers and runs itself (OpenAI "function calling" from an API client).

A request may bring its own tools next to Hermes' own. The model sees both; when it calls one
of the caller's, the turn pauses and hands those calls back (`finish_reason: "tool_calls"`),
exactly as an OpenAI endpoint would, and the caller's next request carries the results that
resume the turn. This module holds the rules for that traffic, kept out of the loop itself:
which calls are pending in a history, how results are matched to them, and how a history left
with unanswered calls is closed so the model never sees a call without its result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes.errors import HermesError
from hermes.models.types import tool_result

__all__ = [
    "MISSING_RESULT",
    "ClientTools",
    "TurnInputError",
    "closing_results",
    "pending_calls",
    "resume_results",
]

MISSING_RESULT = "(no result: the client did not return one for this call)"


class TurnInputError(HermesError, ValueError):
    """The request's tools or tool results do not fit the turn; `param` names the field."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass
class ClientTools:
    """The caller's tools (Chat Completions `tools` entries) and how the model may use tools."""

    schemas: list[dict[str, Any]] = field(default_factory=list)
    choice: str | dict[str, Any] | None = None
    """`tool_choice`: "auto", "none", "required" or {"type": "function", "function": {...}}."""
    parallel_calls: bool | None = None

    def names(self) -> set[str]:
        return {str(s.get("function", {}).get("name")) for s in self.schemas}

    def forces(self) -> bool:
        """Whether `tool_choice` demands a call ("required" or one named function): the caller
        wants a call of its own tools, which one of Hermes' tools must not satisfy."""
        return self.choice == "required" or isinstance(self.choice, dict)

    def call_options(self) -> dict[str, Any]:
        """What goes into a model call that offers tools (never into one that offers none)."""
        options: dict[str, Any] = {}
        if self.choice is not None:
            options["tool_choice"] = self.choice
        if self.parallel_calls is not None:
            options["parallel_tool_calls"] = self.parallel_calls
        return options

    def check_against(self, hermes_names: Iterable[str]) -> None:
        """A caller's tool may not shadow one of Hermes' own: the call would be ambiguous."""
        clash = sorted(self.names() & set(hermes_names))
        if clash:
            raise TurnInputError(
                f"`tools` names {', '.join(clash)}, which Hermes already offers as its own "
                "tool; rename yours (Hermes runs its own tools server-side).",
                "tools",
            )


def pending_calls(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the history's last assistant step that have no result after it."""
    answered: set[str] = set()
    for message in reversed(history):
        role = message.get("role")
        if role == "tool":
            answered.add(str(message.get("tool_call_id")))
            continue
        if role == "assistant" and message.get("tool_calls"):
            return [c for c in message["tool_calls"] if c.get("id") not in answered]
        return []
    return []


def closing_results(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results that close calls the caller never answered (it moved on with a new message)."""
    return [tool_result(call["id"], MISSING_RESULT) for call in pending_calls(history)]


def resume_results(
    history: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The caller's results matched to the pending calls, in call order.

    A result for a call that is not pending is refused (it answers nothing the model asked);
    a pending call the caller left out gets a note saying so, so the model can go on.
    """
    pending = pending_calls(history)
    if not pending:
        raise TurnInputError(
            "The request ends with tool results, but the conversation has no tool calls "
            "waiting for them; send a user message instead.",
            "messages",
        )
    by_id = {str(r.get("tool_call_id")): r for r in results}
    known = {str(c.get("id")) for c in pending}
    unknown = sorted(set(by_id) - known)
    if unknown:
        raise TurnInputError(
            f"Tool results answer unknown call id(s) {', '.join(unknown)}; the calls waiting "
            f"for results are {', '.join(sorted(known))}.",
            "messages",
        )
    return [
        tool_result(call["id"], str(by_id[call["id"]].get("content") or ""))
        if call["id"] in by_id
        else tool_result(call["id"], MISSING_RESULT)
        for call in pending
    ]


def call_name(history: Sequence[dict[str, Any]], call_id: str) -> str | None:
    """The function name of the call `call_id` in the history's last assistant step."""
    for message in reversed(history):
        for call in message.get("tool_calls") or ():
            if call.get("id") == call_id:
                return str(call.get("function", {}).get("name"))
    return None
