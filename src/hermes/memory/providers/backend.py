"""The small contract an external memory service implements (Honcho, Mem0, Supermemory, or a
third party's): plain blocking calls, made one at a time on the provider's own worker thread,
so an adapter is a thin translation of its SDK and never has to think about the event loop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hermes.errors import HermesError


@dataclass(frozen=True)
class Said:
    """One message of a finished turn as the provider receives it (already redacted)."""

    role: str  # "user" or "assistant"
    content: str


class ProviderError(HermesError):
    """A provider cannot work as configured; the message says what to change."""


class CallDropped(ProviderError):
    """The call was not carried out and will not be (its worker process died, or is waiting
    out a restart back-off): the provider's worker counts it as dropped, not failed."""


class StoreHeld(ProviderError):
    """The engine's store admits one process and another holds it (a running server's worker,
    while a CLI command asks): that worker answers at the socket `at` (`serve.py`)."""

    def __init__(self, message: str, at: Path) -> None:
        super().__init__(message)
        self.at = at


class Backend(Protocol):
    """One external memory service. `user` is the provider-side id of a Hermes scope
    (`identity.provider_user`): every call names it, so two scopes never share memory."""

    def check(self) -> str:
        """Reach the service once; a sentence saying what was reached (for `memory setup`)."""
        ...

    def recall(self, user: str, query: str) -> str:
        """What the service knows about `user` that bears on `query` ("" for nothing)."""
        ...

    def store(self, user: str, session: str, turn: Sequence[Said]) -> None:
        """Give the service one finished turn of `user`'s session `session`."""
        ...

    def search(self, user: str, query: str, limit: int) -> list[str]:
        """The provider's own search, for its tool."""
        ...

    def forget(self, user: str) -> int:
        """Delete everything the service keeps about `user`; how many items went."""
        ...

    def close(self) -> None: ...


class NoteMirror(Protocol):
    """What a backend may add: mirror the built-in notes (`on_memory_write`). Optional; a
    backend without `note` keeps only the conversations."""

    def note(self, user: str, target: str, action: str, entry: str) -> None:
        """`entry` was added to (`action` "add") or left ("remove") `user`'s notes `target`
        ("user": about the user, "memory": the agent's own working notes)."""
        ...
