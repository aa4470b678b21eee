"""`/approve` and `/deny`: the gateway's `Approver` (hermes.tools.approval). A dangerous action
asks in the chat and waits for the person who started the turn (or an owner) to answer; no
answer within `gateway.approval_timeout` seconds is a denial."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from hermes.gateway.chats import ChatWorker
from hermes.tools.approval import ApprovalRequest, Decision

ASK = (
    "⚠️ Approval needed: {tool} wants to run\n\n{action}\n\nWhy this needs approval: {reason}\n\n"
    "Reply /approve (once), /approve session, /approve always, or /deny."
)

APPROVE_WORDS: dict[str, Decision] = {"": "once", "once": "once", "session": "session"}
APPROVE_WORDS["always"] = "always"


class ChatApprover:
    """Asks in one chat; the chat's worker holds the future `/approve` or `/deny` resolves."""

    def __init__(
        self,
        worker: ChatWorker,
        say: Callable[[str], Awaitable[None]],
        identity: str,
        timeout: float,
    ) -> None:
        self.worker = worker
        self.say = say
        self.identity = identity
        self.timeout = timeout

    async def approve(self, request: ApprovalRequest) -> Decision:
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self.worker.approval, self.worker.approval_identity = future, self.identity
        try:
            await self.say(
                ASK.format(tool=request.tool, action=request.action, reason=request.reason)
            )
            return await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            await self.say("No answer in time: the action was not run.")
            return "deny"
        finally:
            self.worker.approval = self.worker.approval_identity = None
