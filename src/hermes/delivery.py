"""The delivery contract: how a message Hermes produced on its own (a cron answer, the agent's
`send_message`) reaches a target string such as a webhook URL, `telegram:42` or `home`.

Parts register deliverers; the first one that accepts a target delivers to it. A target no
deliverer accepts is an error that names the target and what would handle it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes.errors import HermesError


class DeliveryError(HermesError):
    """A delivery failed; the message says why, `retryable` (see `hermes.errors`) whether trying
    again could help."""


def split_target(target: str) -> tuple[str, str | None, str | None]:
    """`<platform>[:<chat>[:<thread>]]` as (platform, chat, thread). Chat ids may hold colons
    of their own: an email address takes the whole rest, and a Matrix room id
    (`!room:server[:port]`) runs up to its thread, an event id that starts with `$`."""
    platform, _, rest = target.partition(":")
    if not rest:
        return platform, None, None
    if platform == "email":  # a new mail to the address (a home set in a thread included)
        return platform, rest.partition(":")[0], None
    if platform == "matrix":
        room, sep, event = rest.partition(":$")
        return platform, room, f"${event}" if sep else None
    chat, _, thread = rest.partition(":")
    return platform, chat, thread or None


@dataclass(frozen=True)
class Outbound:
    """A message to deliver: the text, whose it is, and structured details for rich targets
    (a webhook posts `details` as JSON)."""

    text: str
    scope: str
    source: str = "cron"
    title: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class Deliverer(Protocol):
    """Delivers to the targets it accepts; raises `DeliveryError` with a reason on failure."""

    name: str

    def accepts(self, target: str) -> bool: ...

    async def deliver(self, target: str, message: Outbound) -> str:
        """Send `message`; returns where it went (e.g. 'telegram:42'), for the run record."""
        ...


class Deliverers:
    """The runtime's deliverers in registration order (a typed service: `services.get(Deliverers)`)."""

    def __init__(self, deliverers: Sequence[Deliverer] = ()) -> None:
        self.items = list(deliverers)

    def find(self, target: str) -> Deliverer | None:
        return next((d for d in self.items if d.accepts(target)), None)
