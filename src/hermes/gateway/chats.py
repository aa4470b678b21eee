"""One chat's turns. At most one turn runs per chat; a message that arrives meanwhile follows
`gateway.busy_mode` (interrupt, queue or steer). Each chat has its own driver task, so a busy
chat never holds up another."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

from hermes.gateway.base import Inbound
from hermes.tools.approval import Decision

log = logging.getLogger(__name__)

TurnRunner = Callable[[Inbound, "asyncio.Queue[str]", "ChatWorker"], Coroutine[Any, Any, None]]


class ChatWorker:
    """Queue and drive the turns of one chat session key."""

    def __init__(self, key: str, run: TurnRunner, *, scope: str) -> None:
        self.key = key
        self.scope = scope
        self._run = run
        self.pending: deque[Inbound] = deque()
        self.current: asyncio.Task[None] | None = None
        self.current_message: Inbound | None = None
        self.steering: asyncio.Queue[str] | None = None
        self.approval: asyncio.Future[Decision] | None = None
        self.approval_identity: str | None = None
        self.streamed = 0  # characters the running turn has written so far
        self.answered = False  # the running turn has its answer and is sending it
        self._driver: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """A turn is working on its answer (once the answer is out, new messages just queue)."""
        return self.current is not None and not self.current.done() and not self.answered

    # -- what the dispatcher calls ---------------------------------------------------------

    async def submit(self, msg: Inbound, mode: str) -> str | None:
        """Take a new message; returns a short acknowledgement for the chat, if one is due."""
        if not self.busy:
            self.enqueue(msg)
            return None
        if mode == "queue":
            self.enqueue(msg)
            return "⏳ Queued: I'll answer this after the current reply."
        if mode == "steer":
            return self.steer(msg)
        await self.interrupt()
        self.enqueue(msg, front=True)
        return None

    def enqueue(self, msg: Inbound, *, front: bool = False) -> None:
        if front:
            self.pending.appendleft(msg)
        else:
            self.pending.append(msg)
        if self._driver is None or self._driver.done():
            self._driver = asyncio.get_running_loop().create_task(self._drive())

    def steer(self, msg: Inbound) -> str | None:
        """Add text to the running turn before its next model call (or run it next)."""
        if self.busy and self.steering is not None:
            self.steering.put_nowait(msg.text)
            return "⏩ Noted: I'll take that into account in the current reply."
        self.enqueue(msg)
        return None

    async def interrupt(self) -> bool:
        """Cancel the running turn (what it said is kept) and wait until it has stopped."""
        task = self.current
        if task is None or task.done():
            return False
        task.cancel()
        await asyncio.wait([task])
        return True

    async def stop(self) -> bool:
        """`/stop`: drop what is queued and cancel the running turn."""
        self.pending.clear()
        return await self.interrupt()

    async def close(self) -> None:
        await self.stop()
        if self._driver is not None:
            self._driver.cancel()
            await asyncio.wait([self._driver])

    def resolve_approval(self, decision: Decision) -> bool:
        future = self.approval
        if future is None or future.done():
            return False
        future.set_result(decision)
        return True

    # -- the driver ------------------------------------------------------------------------

    async def _drive(self) -> None:
        while self.pending:
            msg = self.pending.popleft()
            steering: asyncio.Queue[str] = asyncio.Queue()
            self.steering, self.current_message, self.answered = steering, msg, False
            self.current = asyncio.get_running_loop().create_task(self._run(msg, steering, self))
            await asyncio.wait([self.current])
            self.steering = None
            left = _drain(steering)
            if left:  # steered too late for that turn: it becomes the next one
                self.pending.appendleft(replace(msg, text="\n\n".join(left), attachments=()))
        self.current_message = None


def _drain(queue: asyncio.Queue[str]) -> list[str]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items
