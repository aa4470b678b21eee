"""The contract of one agent turn: what a caller asks (`TurnRequest`), what it watches
(`TurnObserver`) and what it gets back (`TurnResult`). Surfaces, hooks and memory providers
depend on these types, not on the loop that runs a turn (`agent.loop`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.client_tools import ClientTools
from hermes.models.client import ModelClient
from hermes.models.images import ImageBlob
from hermes.models.types import ToolCall, Usage
from hermes.store.base import DEFAULT_SCOPE, MessageRecord
from hermes.tools.approval import Approver
from hermes.tools.registry import Toolset


class TurnObserver:
    """Receives live progress of a turn (streaming text, tool activity). Override what you need."""

    def on_delta(self, text: str) -> None:
        return None

    def on_tool_start(self, call_id: str, name: str) -> None:
        return None

    def on_tool_end(self, call_id: str, name: str, ok: bool) -> None:
        return None

    def on_tool_arguments(self, call_id: str, name: str, arguments: str) -> None:
        """The raw JSON arguments of a call, just before `on_tool_start` (terminal tool lines)."""
        return None

    def on_notice(self, kind: str, text: str) -> None:
        """Something the user may want to know happened mid-turn (`kind` "compression")."""
        return None


@dataclass
class TurnRequest:
    user_message: str
    """The new user message; empty when the turn resumes with `tool_results`."""
    session_id: str | None = None
    scope: str = DEFAULT_SCOPE
    source: str = "cli"
    history: list[dict[str, Any]] | None = None
    system_extra: str | None = None
    toolset: Toolset | None = None
    approver: Approver | None = None
    """Who can approve a dangerous tool action on this surface; None: nobody to ask."""
    steering: asyncio.Queue[str] | None = None
    """Text the user adds while the turn runs (gateway `steer`): drained before each model
    call and sent, and stored, as user messages of this turn."""
    model_options: dict[str, Any] = field(default_factory=dict)
    """Chat Completions parameters for every model call of the turn (sampling, stop,
    response_format, ...): the caller's choices, passed through as given."""
    client_tools: ClientTools | None = None
    """Tools the caller runs itself: calling one pauses the turn (see agent.client_tools)."""
    tool_results: list[dict[str, Any]] | None = None
    """`tool` messages answering the calls a paused turn handed back; resumes that turn."""
    images: dict[str, ImageBlob] = field(default_factory=dict)
    """The bytes behind the image markers of this request's messages (`hermes.models.images`),
    by name: stored with the session's images, and what a stateless turn shows its model."""
    model: ModelClient | None = None
    """The client this turn's calls go to (a cron job's own model chain); None: the agent's.
    Compression and vision checks keep the agent's model."""


@dataclass
class TurnResult:
    session_id: str
    scope: str
    content: str
    stored: list[MessageRecord]
    usage: Usage
    iterations: int
    finish_reason: str
    user_turn_number: int = 0
    source: str = ""
    """The session's source (who created it), for after-turn hooks that skip some."""
    message_count: int = 0
    """Messages stored in the session after this turn: hooks read the tail without a lookup."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Calls of the caller's own tools the turn paused on (`finish_reason` "tool_calls")."""
    usage_by_model: dict[str, tuple[Usage, int]] = field(default_factory=dict)
    """Tokens and calls per model that answered (fallbacks apart), for cost per model."""
