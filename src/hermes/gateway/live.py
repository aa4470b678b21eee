"""Live answers: one chat message per turn, edited in place as the answer streams.

A quick answer (streamed whole before `FIRST_AFTER`) goes out whole, exactly as without streaming,
so short replies never flicker. A slower one appears with its first delta (or a running tool)
after that delay and is then edited at
most once per the adapter's `edit_interval`; deltas that arrive meanwhile are coalesced, so a slow
or rate-limited platform sees fewer, larger edits instead of a backlog. An edit that is refused or
that the platform made us wait for (its flood control) doubles the interval for the rest of the
turn. Past the platform's length the answer continues in a new message. The last edit carries the
final text, formatted as a whole answer would be.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes.agent.turn import TurnObserver
from hermes.gateway.base import Inbound, PlatformAdapter
from hermes.gateway.platforms.telegram_format import split_text

log = logging.getLogger(__name__)

FIRST_AFTER = 0.8
"""Seconds before a streaming answer is first shown (a faster answer is sent whole)."""
MIN_INTERVAL = 0.05
MAX_INTERVAL = 8.0
CURSOR = " ▍"


@dataclass(frozen=True)
class LiveTiming:
    """The pace of live answers, as one factor on every delay: the wait before an answer is
    first shown and each platform's `edit_interval` (with its floor and its ceiling after flood
    control). The gateway keeps one (`Gateway.live_timing`); 1.0 is the platforms' own pace, and
    a smaller scale runs the very same behaviour faster (the tests use it)."""

    scale: float = 1.0

    @property
    def first_after(self) -> float:
        return FIRST_AFTER * self.scale

    @property
    def max_interval(self) -> float:
        return MAX_INTERVAL * self.scale

    def interval(self, adapter: PlatformAdapter) -> float:
        """Seconds between edits on `adapter`'s platform before any flood control."""
        return max(adapter.edit_interval, MIN_INTERVAL) * self.scale


class LiveReply(TurnObserver):
    """Streams one turn's answer into a message the adapter edits; `finish` sends the final text."""

    def __init__(
        self,
        adapter: PlatformAdapter,
        msg: Inbound,
        *,
        timing: LiveTiming = LiveTiming(),  # frozen: one shared default is safe
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.adapter = adapter
        self.msg = msg
        self.first_after = timing.first_after
        self.interval = timing.interval(adapter)
        self.max_interval = timing.max_interval
        self.clock = clock
        self.text = ""
        self.tools: dict[str, str] = {}  # call id -> progress line, in call order
        self.message_ids: list[str] = []
        self.shown: list[str] = []
        self.edits = 0
        self._started = clock()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one change of the chat's messages at a time

    # -- observer --------------------------------------------------------------------------

    def on_delta(self, text: str) -> None:
        self.text += text
        self._poke()

    def on_tool_start(self, call_id: str, name: str) -> None:
        self.text = ""  # what the model said before calling tools is not part of the answer
        self.tools[call_id] = f"⚙️ {name}…"
        self._poke()

    def on_tool_end(self, call_id: str, name: str, ok: bool) -> None:
        self.tools[call_id] = f"{'✓' if ok else '✗'} {name}"
        self._poke()

    # -- lifecycle -------------------------------------------------------------------------

    def _poke(self) -> None:
        self._changed.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._edit_loop())

    @property
    def visible(self) -> bool:
        """Whether any part of the answer has been shown yet."""
        return bool(self.message_ids)

    async def finish(self, final_text: str) -> bool:
        """Show `final_text` as the answer. False: nothing was shown yet, so the caller sends the
        answer the usual way (a whole message, as without streaming)."""
        await self._stop()
        async with self._lock:  # an edit under way when the turn ended lands first
            if not self.message_ids:
                return False
            pieces = self._pieces(final_text.strip()) or [self._progress() or "…"]
            pieces += ["…"] * (len(self.message_ids) - len(pieces))
            await self._show(pieces)
        return True

    async def abandon(self) -> None:
        """The turn failed or was interrupted: stop editing, leave what was shown."""
        await self._stop()

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _edit_loop(self) -> None:
        wait = self.first_after - (self.clock() - self._started)
        if wait > 0:
            await asyncio.sleep(wait)
        if not any(line.endswith("…") for line in self.tools.values()):
            # shown from the next delta on: an answer that streamed whole before now (a quick
            # one, or one whose turn is slow to end on a busy machine) goes out whole instead
            self._changed.clear()
        while True:
            await self._changed.wait()
            self._changed.clear()
            began = self.clock()
            refused = False
            try:
                # shielded: stopping the loop never cuts a send in half (its id would be lost)
                await asyncio.shield(self._show_draft())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never disturb the turn; the final edit tries again
                log.debug("live edit failed: %s", exc)
                refused = True
            took = self.clock() - began
            if refused or took > self.interval:  # flood control made us wait: slow down,
                self.interval = min(self.interval * 2, self.max_interval)  # counted from now
                await asyncio.sleep(self.interval)
            else:
                await asyncio.sleep(self.interval - took)

    async def _show_draft(self) -> None:
        async with self._lock:
            await self._show(self._pieces(self._draft()), cursor=True)

    # -- what is shown ---------------------------------------------------------------------

    def _progress(self) -> str:
        return " · ".join(self.tools.values())

    def _draft(self) -> str:
        progress = self._progress()
        text = self.text.strip()
        return f"{progress}\n\n{text}" if progress and text else progress or text

    def _pieces(self, text: str) -> list[str]:
        return split_text(text, self.adapter.message_limit) if text else []

    async def _show(self, pieces: list[str], *, cursor: bool = False) -> None:
        """Make the chat's messages read `pieces`: edit those that changed, send new ones."""
        for i, piece in enumerate(pieces):
            if cursor and i == len(pieces) - 1 and len(piece) + len(CURSOR) <= self._limit():
                piece += CURSOR
            if i < len(self.message_ids):
                if self.shown[i] != piece:
                    await self.adapter.edit(self.msg.chat, self.message_ids[i], piece)
                    self.shown[i] = piece
                    self.edits += 1
                continue
            sent = await self.adapter.send(
                self.msg.chat,
                piece,
                thread=self.msg.thread,
                reply_to=self.msg.message_id if i == 0 else None,
                meta=self.msg.meta,
            )
            if sent is None:  # the platform gave no id to edit: nothing more can be shown live
                raise RuntimeError(f"{self.adapter.name} returned no message id")
            self.message_ids.append(sent)
            self.shown.append(piece)

    def _limit(self) -> int:
        return int(self.adapter.message_limit)

    def stats(self) -> dict[str, Any]:
        return {"messages": len(self.message_ids), "edits": self.edits}
