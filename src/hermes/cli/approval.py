"""The approver of interactive `hermes chat`: asks at the terminal whether a dangerous command
may run (once / for this session / always / deny). No answer within the timeout is a denial.

Kept apart from the chat loop so other terminal front-ends can reuse it: give it a console to
print on and (optionally) an `ask` coroutine that reads one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from rich.console import Console
from rich.markup import escape

from hermes.tools.approval import ApprovalRequest, Decision

ANSWERS: dict[str, Decision] = {
    "o": "once",
    "once": "once",
    "y": "once",
    "yes": "once",
    "s": "session",
    "session": "session",
    "a": "always",
    "always": "always",
    "d": "deny",
    "deny": "deny",
    "n": "deny",
    "no": "deny",
    "": "deny",
}
PROMPT = "allow? [o]nce / [s]ession / [a]lways / [d]eny › "
TIMEOUT_S = 300.0

Ask = Callable[[str], Awaitable[str]]


async def _prompt_toolkit_ask(message: str) -> str:
    from prompt_toolkit import PromptSession

    session: PromptSession[str] = PromptSession()
    return await session.prompt_async(message)


class PromptApprover:
    """One question per request; concurrent requests (parallel tool calls) ask in turn."""

    def __init__(
        self, console: Console, ask: Ask | None = None, timeout: float = TIMEOUT_S
    ) -> None:
        self.console = console
        self.ask = ask or _prompt_toolkit_ask
        self.timeout = timeout
        self._lock = asyncio.Lock()

    async def approve(self, request: ApprovalRequest) -> Decision:
        async with self._lock:
            self.console.print(
                f"\n[bold yellow]Approval needed[/bold yellow]: {request.tool} wants to run\n"
                f"  [bold]{escape(request.action)}[/bold]\n"
                f"  because it {escape(request.reason)}."
            )
            for _ in range(3):
                try:
                    answer = await asyncio.wait_for(self.ask(PROMPT), self.timeout)
                except (TimeoutError, EOFError, KeyboardInterrupt):
                    self.console.print("[red]No answer: denied.[/red]")
                    return "deny"
                decision = ANSWERS.get(answer.strip().lower())
                if decision is not None:
                    return decision
                self.console.print("Answer o, s, a or d.")
            return "deny"
