"""One interactive chat: the current session, its turns (interruptible), and the questions
it asks the user (approvals, picks from a list)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape

from hermes.agent.turn import TurnRequest
from hermes.cli.approval import PromptApprover
from hermes.cli.repl.render import TurnView
from hermes.models.errors import ModelError
from hermes.models.types import Usage
from hermes.runtime import Runtime
from hermes.store.base import DEFAULT_SCOPE, Store

Ask = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class TurnUsage:
    """What one turn of this chat cost, and where it starts, so /undo can take it back out
    of the chat's figures."""

    session_id: str
    start: int
    usage: Usage
    by_model: Mapping[str, tuple[Usage, int]] = field(default_factory=dict)
    """Its tokens and calls by the model that answered (a fallback may have)."""


def _add(a: Usage, b: Usage, *, sign: int = 1) -> Usage:
    return Usage(
        a.prompt_tokens + sign * b.prompt_tokens,
        a.completion_tokens + sign * b.completion_tokens,
        a.total_tokens + sign * b.total_tokens,
    )


@contextmanager
def sigint_calls(handler: Callable[[], None]) -> Iterator[None]:
    """Route Ctrl-C (SIGINT) to `handler` while a turn runs; the previous handler after."""
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / platform
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)


class ChatSession:
    """What the prompt loop and the slash commands share."""

    def __init__(
        self, runtime: Runtime, console: Console, *, session_id: str, rich: bool, ask: Ask
    ) -> None:
        self.runtime = runtime
        self.console = console
        self.session_id = session_id
        self.scope = DEFAULT_SCOPE
        self.rich = rich
        self.ask = ask
        self.approver = PromptApprover(console, ask=self._ask_approval)
        self.usage = Usage()
        self.turns = 0
        self.turn_log: list[TurnUsage] = []
        """This chat's turns still counted in `usage` (newest last)."""
        self.undone = Usage()
        """Tokens of turns taken back with /undo: spent, but no longer this chat's context."""
        self.undone_since_turn = False
        """A turn was taken back since the last one ran: the session's last prompt size is
        stale (it still held the undone turn)."""
        self.exit_requested = False
        self.interrupted = False
        """The last turn was stopped with Ctrl-C: one more Ctrl-C at the prompt exits."""
        self._view: TurnView | None = None
        self.cache: dict[str, object] = {}
        """Answers worth keeping for the chat's life (the endpoint's model list)."""

    @property
    def store(self) -> Store:
        return self.runtime.store

    def print(self, text: str) -> None:
        """A line of Rich markup (plain consoles drop the styling)."""
        self.console.print(text, soft_wrap=True, highlight=False)

    def say(self, text: str) -> None:
        """A line of plain text that may contain brackets (never read as markup)."""
        self.console.print(escape(text), soft_wrap=True, highlight=False)

    async def send(self, text: str, *, system_extra: str | None = None) -> None:
        """Run one turn; Ctrl-C stops it (what was said is kept), a second Ctrl-C exits."""
        view = self._view = TurnView(self.console, rich=self.rich)
        request = TurnRequest(
            user_message=text,
            session_id=self.session_id,
            scope=self.scope,
            source="cli",
            approver=self.approver,
            system_extra=system_extra,
        )
        task = asyncio.create_task(self.runtime.agent.run_turn(request, view))
        presses = 0

        def on_ctrl_c() -> None:
            nonlocal presses
            presses += 1
            if presses == 1:
                task.cancel()
            else:
                self.exit_requested = True

        self.interrupted = False
        try:
            with sigint_calls(on_ctrl_c):
                result = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            view.interrupted()
            self.interrupted = True
            return
        except ModelError as exc:
            view.finish("")
            self.print(f"[red]{escape(str(exc))}[/red]")
            return
        finally:
            self._view = None
        view.finish(result.content)
        self.turns += 1
        self.usage = _add(self.usage, result.usage)
        self.undone_since_turn = False
        if result.stored:
            self.turn_log.append(
                TurnUsage(
                    self.session_id,
                    result.stored[0].index,
                    result.usage,
                    dict(result.usage_by_model),
                )
            )

    def usage_by_model(self) -> dict[str, Usage]:
        """This chat's tokens by the model that answered (turns taken back left out)."""
        totals: dict[str, Usage] = {}
        for turn in self.turn_log:
            for model, (usage, _calls) in turn.by_model.items():
                totals[model] = _add(totals.get(model, Usage()), usage)
        return totals

    def forget_turn(self, start: int) -> Usage | None:
        """Take the turn of this chat that began at message `start` out of the chat's
        figures (after /undo or /retry); its usage, or None if it was not this chat's."""
        for turn in reversed(self.turn_log):
            if turn.session_id == self.session_id and turn.start == start:
                self.turn_log.remove(turn)
                self.turns -= 1
                self.usage = _add(self.usage, turn.usage, sign=-1)
                self.undone = _add(self.undone, turn.usage)
                self.undone_since_turn = True
                return turn.usage
        return None

    def reset_usage(self) -> None:
        """A new or resumed session: the chat's figures start again."""
        self.usage, self.undone, self.turns = Usage(), Usage(), 0
        self.undone_since_turn = False
        self.turn_log.clear()

    def notice(self, text: str) -> None:
        TurnView(self.console, rich=self.rich).notice(text)

    async def _ask_approval(self, message: str) -> str:
        view = self._view
        if view is None:
            return await self.ask(message)
        with view.paused():
            return await self.ask(message)
