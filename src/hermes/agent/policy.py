"""The seam between the tool loop and context management (history loading, compression)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes.models.errors import ContextLengthExceededError
from hermes.models.types import Usage
from hermes.store.base import MessageRecord, SessionRecord, Store

# Told the messages about to leave the prompt (scope, session id, messages) before compressing;
# may answer with what the memory providers know, for the summary prompt.
PreCompressHook = Callable[[str, str, list[dict[str, Any]]], Awaitable[str | None]]


@dataclass
class CallState:
    """Everything about to be sent to the model; a policy may rewrite `history` before a call."""

    scope: str
    session_id: str
    system: list[dict[str, Any]]
    history: list[dict[str, Any]]
    turn: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    stateless: bool = False
    # usage anchor: the provider counted `anchor_tokens` for the first `anchor_len` messages of
    # messages(); estimates add chars/4 for what came after. None = no evidence yet.
    anchor_tokens: int | None = None
    anchor_len: int = 0
    source: str = "cli"
    notes: dict[str, Any] = field(default_factory=dict)
    on_pre_compress: PreCompressHook | None = None
    refresh_system: Callable[[], Awaitable[str]] | None = None
    """Rebuilds (and stores) the session's system prompt: compression calls it, since it
    rewrites the prompt anyway, so the frozen notes snapshot never goes stale for months."""
    notice: Callable[[str, str], None] | None = None
    """Tells the turn's watcher (kind, one line) about context work, e.g. a compression."""

    def messages(self) -> list[dict[str, Any]]:
        return [*self.system, *self.history, *self.turn]


def visible(records: list[MessageRecord], hidden: list[tuple[int, int]]) -> list[MessageRecord]:
    """The records outside the hidden [start, end) ranges (exchanges taken back with /undo)."""
    if not hidden:
        return records
    return [r for r in records if not any(a <= r.index < b for a, b in hidden)]


class ContextPolicy(Protocol):
    async def load_history(self, session: SessionRecord) -> list[dict[str, Any]]: ...

    async def before_call(self, state: CallState) -> None: ...

    async def on_context_error(self, state: CallState, error: ContextLengthExceededError) -> bool:
        """Shrink the context after the provider refused it; True means retry the call."""
        ...

    async def after_response(self, state: CallState, usage: Usage | None) -> None: ...

    def note_persisted(self, scope: str, session_id: str, records: list[MessageRecord]) -> None:
        """The turn's messages were stored (a cache of the history may extend itself)."""
        ...


class FullHistory:
    """No compression: the whole stored transcript goes into every prompt."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def load_history(self, session: SessionRecord) -> list[dict[str, Any]]:
        def load() -> list[MessageRecord]:
            records = self._store.get_messages(session.scope, session.id)
            return visible(records, self._store.hidden_ranges(session.scope, session.id))

        return [r.to_openai() for r in await asyncio.to_thread(load)]

    async def before_call(self, state: CallState) -> None:
        return None

    async def on_context_error(self, state: CallState, error: ContextLengthExceededError) -> bool:
        return False

    async def after_response(self, state: CallState, usage: Usage | None) -> None:
        return None

    def note_persisted(self, scope: str, session_id: str, records: list[MessageRecord]) -> None:
        return None
