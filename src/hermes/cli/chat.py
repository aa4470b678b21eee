"""`hermes chat`: the agent in a terminal, one-shot (-q) or interactive."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console

from hermes.agent.loop import TurnObserver, TurnRequest
from hermes.cli.approval import PromptApprover
from hermes.cli.common import fail, settings_or_exit
from hermes.config.settings import Settings
from hermes.models.errors import ModelError, ModelNotConfiguredError
from hermes.runtime import Runtime, build_runtime
from hermes.scopes import InvalidIdError, validate_id

HELP_TEXT = """Commands:
  /new    start a new session (the old one stays searchable)
  /help   show this help
  /exit   leave (Ctrl-D works too)"""


def new_session_id() -> str:
    return f"{datetime.now(UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"


class _Printer(TurnObserver):
    """Streams the answer to the terminal as it arrives, tool activity on one dim line each."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.streamed = False

    def on_delta(self, text: str) -> None:
        self.streamed = True
        self.console.print(text, end="", markup=False, highlight=False, soft_wrap=True)

    def on_tool_start(self, call_id: str, name: str) -> None:
        if self.streamed:
            self.console.print()
            self.streamed = False
        self.console.print(f"[dim]· {name}…[/dim]")


def chat(
    query: str | None = typer.Option(
        None, "-q", "--query", help="Ask once; print only the answer."
    ),
    session: str | None = typer.Option(
        None, "--session", "-s", help="Continue (or start) this named session."
    ),
) -> None:
    """Chat with Hermes: interactive, or one-shot with -q."""
    settings = with_cwd_workdir(settings_or_exit())
    if session is not None:
        try:
            validate_id(session, what="session name")
        except InvalidIdError as exc:
            fail(str(exc), 2)
    if query is not None:
        if not query.strip():
            fail("the question given with -q is empty", 2)
        asyncio.run(_one_shot(build_runtime(settings), query, session))
    else:
        asyncio.run(_interactive(build_runtime(settings), session))


def with_cwd_workdir(settings: Settings) -> Settings:
    """`hermes chat` works where it was started unless tools.workdir / HERMES_WORKDIR says
    otherwise (SPEC §4)."""
    if settings.tools.workdir is None:
        settings.tools.workdir = Path.cwd()
    return settings


async def _one_shot(runtime: Runtime, query: str, session: str | None) -> None:
    try:
        result = await runtime.agent.run_turn(
            TurnRequest(user_message=query, session_id=session or new_session_id(), source="cli")
        )
    except ModelNotConfiguredError as exc:
        await runtime.aclose()
        fail(str(exc), 2)
    except ModelError as exc:
        await runtime.aclose()
        fail(str(exc), 1)
    await runtime.aclose()
    typer.echo(result.content)


async def _interactive(runtime: Runtime, session: str | None) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    console = Console()
    prompt: PromptSession[str] = PromptSession(
        history=FileHistory(str(runtime.settings.home / "logs" / "chat_history"))
    )
    session_id = session or new_session_id()
    approver = PromptApprover(console)
    console.print(f"[bold]Hermes[/bold] — session [cyan]{session_id}[/cyan]. /help for commands.")
    try:
        while True:
            try:
                line = (await prompt.prompt_async("you › ")).strip()
            except (EOFError, KeyboardInterrupt):
                break
            if not line:
                continue
            if line in ("/exit", "/quit"):
                break
            if line == "/help":
                console.print(HELP_TEXT)
                continue
            if line == "/new":
                session_id = new_session_id()
                console.print(f"New session [cyan]{session_id}[/cyan].")
                continue
            if line.startswith("/"):
                console.print(f"Unknown command {line.split()[0]}. /help lists them.")
                continue
            printer = _Printer(console)
            try:
                result = await runtime.agent.run_turn(
                    TurnRequest(
                        user_message=line, session_id=session_id, source="cli", approver=approver
                    ),
                    printer,
                )
            except ModelError as exc:
                console.print(f"[red]{exc}[/red]")
                continue
            if not printer.streamed:
                console.print(result.content, markup=False)
            else:
                console.print()
    finally:
        await runtime.aclose()
