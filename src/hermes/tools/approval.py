"""The approval contract: a tool about to do something dangerous asks the surface's approver.

Each surface supplies its own approver (a prompt in `hermes chat`, `/approve` on the gateway);
surfaces with nobody to ask (one-shot `chat -q`, the API, cron) supply none, and the tool then
refuses with a result saying approval is needed and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

Decision = Literal["once", "session", "always", "deny"]
APPROVED: frozenset[Decision] = frozenset({"once", "session", "always"})


@dataclass(frozen=True)
class ApprovalRequest:
    """What needs approving: which tool, the exact action, and why it is considered dangerous."""

    tool: str
    action: str
    reason: str
    scope: str
    session_id: str


class Approver(Protocol):
    """Asks a person; returns their decision (`deny` when they do not answer in time)."""

    async def approve(self, request: ApprovalRequest) -> Decision: ...
