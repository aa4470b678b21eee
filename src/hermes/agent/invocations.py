"""The contract between a chat surface and whatever turns `/<name> text` into a turn.

The gateway (a part) must not import the skills part, yet a user on Telegram expects
`/<skill> text` to work as it does in `hermes chat`. The skills part provides a
`SlashInvocations` in the runtime's services; a surface looks it up by this type.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Invocation:
    """A turn run with extra instructions: `system_extra` goes with this turn only,
    `user_message` (the user's own text) is what gets stored."""

    names: tuple[str, ...]
    system_extra: str
    user_message: str


class SlashInvocations:
    """Expands `/<name> [text]` lines; None when the line names nothing this provider knows,
    so the surface handles it as its own command or as plain text."""

    def expand(self, text: str, *, platform: str) -> Invocation | None:
        raise NotImplementedError(f"{type(self).__name__} does not expand slash invocations")

    def listing(self, *, platform: str) -> list[tuple[str, str]]:
        """(name, one-line description) of what `/<name>` runs here, for `/skills`."""
        return []
