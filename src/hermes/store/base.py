"""The storage contract. SQLite implements it today, PostgreSQL next; no SQL leaks past it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_SCOPE = "default"


class StoreError(Exception):
    """The store refused an operation (bad id, missing session, corrupt database)."""


@dataclass(slots=True)
class SessionRecord:
    scope: str
    id: str
    source: str
    started_at: float
    updated_at: float
    title: str | None = None
    parent_session_id: str | None = None
    ended_at: float | None = None
    message_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    last_prompt_tokens: int | None = None
    system_prompt: str | None = None
    user_turns: int = 0


@dataclass(slots=True)
class NewMessage:
    """A message about to be stored; the store assigns its id and position."""

    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    timestamp: float | None = None
    token_count: int | None = None


@dataclass(slots=True)
class MessageRecord:
    id: int
    scope: str
    session_id: str
    index: int
    role: str
    content: str | None
    timestamp: float
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    token_count: int | None = None

    def to_openai(self) -> dict[str, Any]:
        """The message as the Chat Completions API expects it."""
        msg: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        if self.role == "tool":
            msg["tool_call_id"] = self.tool_call_id
        return msg


@dataclass(frozen=True, slots=True)
class Lease:
    """A named cross-process lease and who holds it (one agent turn on one session)."""

    name: str
    holder: str


@dataclass(slots=True)
class SearchHit:
    session_id: str
    message_index: int
    role: str
    snippet: str
    score: float
    message_id: int = 0
    timestamp: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Store(Protocol):
    """Sessions, messages and search, always addressed within a scope."""

    def ensure_session(
        self,
        scope: str,
        session_id: str,
        *,
        source: str,
        title: str | None = None,
        parent_session_id: str | None = None,
        started_at: float | None = None,
    ) -> SessionRecord: ...

    def begin_turn(
        self, scope: str, session_id: str, *, source: str, lease: Lease, ttl_seconds: float
    ) -> SessionRecord | None:
        """Take `lease` and ensure the session in one transaction; None while someone else's
        lease is live (the caller polls). Saves a turn a round trip and a write."""
        ...

    def get_session(self, scope: str, session_id: str) -> SessionRecord | None: ...

    def list_sessions(
        self, scope: str, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]: ...

    def set_system_prompt(self, scope: str, session_id: str, prompt: str) -> None: ...

    def delete_session(self, scope: str, session_id: str) -> bool: ...

    def delete_scope(self, scope: str) -> int: ...

    def append_messages(
        self,
        scope: str,
        session_id: str,
        messages: list[NewMessage],
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        last_prompt_tokens: int | None = None,
        system_prompt: str | None = None,
        release: Lease | None = None,
    ) -> list[MessageRecord]:
        """Append all or none; in the same transaction set the session's system prompt if it
        has none yet and give up `release`, so a turn ends in one write."""
        ...

    def get_messages(
        self, scope: str, session_id: str, *, start: int = 0, end: int | None = None
    ) -> list[MessageRecord]: ...

    def count_messages(self, scope: str | None = None) -> int: ...

    def record_usage(
        self,
        scope: str,
        session_id: str,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        last_prompt_tokens: int | None = None,
    ) -> None: ...

    def search(self, scope: str, query: str, *, limit: int = 10) -> list[SearchHit]: ...

    def acquire_lock(self, name: str, holder: str, ttl_seconds: float) -> bool: ...

    def release_lock(self, name: str, holder: str) -> None: ...

    def health(self) -> dict[str, Any]: ...

    def close(self) -> None: ...
