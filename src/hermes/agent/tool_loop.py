"""The one tool loop: call the model, run the tools it asks for, call it again with their
results, until it answers or the steps run out.

A user's turn (`Agent`), the background memory and skill reviews and a delegated sub-agent
all run it; they differ only in how they call the model (`Ask`), how they run one step's
calls (`Act`) and their `Limits`. `ToolChat` is the `Ask` and `Act` of a conversation that
lives only in memory (the reviews, a sub-agent): nothing is stored, streamed or compressed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hermes.models.client import ModelClient
from hermes.models.types import Completion, ToolCall, tool_result
from hermes.tools.registry import ToolContext, ToolOutcome, Toolset

Ask = Callable[[bool], Awaitable[Completion]]
"""One model call over the conversation so far; the flag says whether tools are offered."""
Act = Callable[[Completion], Awaitable[bool]]
"""Runs one step's tool calls into the conversation; True ends the loop after this step."""


@dataclass(frozen=True)
class Limits:
    max_steps: int
    """Model calls that may ask for tools."""
    closing_note: str | None = None
    """When the steps run out: one last call without tools, with this note as a system
    message, so the caller still gets an answer. None: the loop just stops."""


@dataclass(frozen=True)
class LoopEnd:
    """How the loop ended. `completion` is the last reply (None only when no call was made)."""

    completion: Completion | None
    steps: int
    """Calls made that offered tools (the closing call not counted)."""
    how: Literal["answer", "stopped", "closed", "limit"]
    """"answer" (a reply without tool calls), "stopped" (`Act` ended it), "closed" (out of
    steps, answered by the closing call) or "limit" (out of steps, no closing call)."""


async def run_tool_loop(
    ask: Ask, act: Act, limits: Limits, transcript: list[dict[str, Any]]
) -> LoopEnd:
    """Ask, act, repeat within `limits`; `transcript` is where the closing note goes (and is
    taken out of again: it speaks to the model once, it is no part of the conversation)."""
    completion: Completion | None = None
    for step in range(1, limits.max_steps + 1):
        completion = await ask(True)
        if not completion.tool_calls:
            return LoopEnd(completion, step, "answer")
        if await act(completion):
            return LoopEnd(completion, step, "stopped")
    if limits.closing_note is None:
        return LoopEnd(completion, limits.max_steps, "limit")
    transcript.append({"role": "system", "content": limits.closing_note})
    try:
        completion = await ask(False)
    finally:
        transcript.pop()
    return LoopEnd(completion, limits.max_steps, "closed")


class ToolChat:
    """A conversation with its own tools and no session: `messages` grows with each step.

    `concurrent` runs one step's calls at once (independent work, a sub-agent); off, they run
    in order (they write the same files, the reviews)."""

    def __init__(
        self,
        model: ModelClient,
        toolset: Toolset,
        ctx: ToolContext,
        messages: list[dict[str, Any]],
        *,
        concurrent: bool = False,
    ) -> None:
        self.model = model
        self.toolset = toolset
        self.ctx = ctx
        self.messages = messages
        self.concurrent = concurrent

    async def ask(self, tools: bool) -> Completion:
        offered = (self.toolset.schemas() or None) if tools else None
        return await self.model.complete(self.messages, tools=offered)

    async def run(self, completion: Completion) -> list[tuple[ToolCall, ToolOutcome]]:
        """Run one step's calls; the reply and each result join the conversation."""
        calls: Sequence[ToolCall] = completion.tool_calls
        self.messages.append(completion.assistant_message())
        if self.concurrent:
            outcomes = list(await asyncio.gather(*(self._call(c) for c in calls)))
        else:
            outcomes = [await self._call(c) for c in calls]
        self.messages.extend(
            tool_result(c.id, o.text) for c, o in zip(calls, outcomes, strict=True)
        )
        return list(zip(calls, outcomes, strict=True))

    async def _call(self, call: ToolCall) -> ToolOutcome:
        return await self.toolset.call(call.name, call.arguments, self.ctx)
