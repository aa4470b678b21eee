"""One interactive chat: the current session, its turns (interruptible), and the questions
it asks the user (approvals, picks from a list)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape

from hermes.agent.loop import TurnRequest
from hermes.cli.approval import PromptApprover
from hermes.cli.repl.render import TurnView
from hermes.models.errors import ModelError
from hermes.models.types import Usage
from hermes.runtime import Runtime
from hermes.store.base import DEFAULT_SCOPE, Store

Ask = Callable[[str], Awaitable[str]]


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
        self.usage = Usage(
            self.usage.prompt_tokens + result.usage.prompt_tokens,
            self.usage.completion_tokens + result.usage.completion_tokens,
            self.usage.total_tokens + result.usage.total_tokens,
        )

    def notice(self, text: str) -> None:
        TurnView(self.console, rich=self.rich).notice(text)

    async def _ask_approval(self, message: str) -> str:
        view = self._view
        if view is None:
            return await self.ask(message)
        with view.paused():
            return await self.ask(message)
