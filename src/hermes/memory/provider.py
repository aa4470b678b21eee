"""The built-in memory provider: MEMORY.md / USER.md notes, their review pass and pre-compression
flush, and the `memory` tool. It is the first `MemoryProvider`; an external one runs beside it."""

from __future__ import annotations

from typing import Any

from hermes.agent.context import PromptContext
from hermes.agent.loop import Agent
from hermes.agent.memory_providers import MemoryProvider
from hermes.agent.turn import TurnResult
from hermes.config.settings import Settings
from hermes.memory.review import flush, review
from hermes.memory.snapshot import render_scope
from hermes.memory.tool import memory_tool
from hermes.services import Services
from hermes.tools.registry import Tool


class NotesProvider(MemoryProvider):
    name = "notes"
    builtin = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._agent: Agent | None = None

    def initialize(self, services: Services) -> None:
        self._agent = services.get(Agent)

    @property
    def agent(self) -> Agent:
        if self._agent is None:
            raise RuntimeError("the notes provider was used before the agent initialized it")
        return self._agent

    def system_prompt_block(self, ctx: PromptContext) -> str | None:
        if not self.settings.memory.enabled:
            return None
        return render_scope(self.settings.home, ctx.scope, self.settings, self.agent.store)

    async def sync_turn(self, result: TurnResult) -> None:
        await review(self.agent, result)

    async def on_pre_compress(
        self, scope: str, session_id: str, messages: list[dict[str, Any]]
    ) -> None:
        await flush(self.agent, scope, session_id, messages)

    def tools(self) -> list[Tool]:
        return [memory_tool] if self.settings.memory.enabled else []
