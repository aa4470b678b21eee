"""`hermes chat`: the agent in a terminal, one-shot (-q) or interactive (`hermes.cli.repl`)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hermes.cli_common import fail, settings_or_exit
from hermes.config.settings import Settings
from hermes.scopes import InvalidIdError, validate_id

if TYPE_CHECKING:  # the agent and the terminal UI load when a chat starts, not with `hermes`
    from hermes.runtime import Runtime

__all__ = ["chat", "with_cwd_workdir"]


def chat(
    query: str | None = typer.Option(
        None, "-q", "--query", help="Ask once; print only the answer."
    ),
    session: str | None = typer.Option(
        None, "--session", "-s", help="Continue (or start) this named session."
    ),
    plain: bool = typer.Option(
        False, "--plain", help="Plain text: no Markdown rendering, colours or live lines."
    ),
) -> None:
    """Chat with Hermes: interactive, or one-shot with -q."""
    from hermes.runtime import build_runtime

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
        from hermes.allocator import keep_freed_memory

        keep_freed_memory()  # a long chat's turns build large requests, as the server's do
        try:
            asyncio.run(_interactive(build_runtime(settings), session, plain))
        except KeyboardInterrupt:  # Ctrl-C between two turns: leave quietly, like Ctrl-D
            raise typer.Exit(130) from None


def with_cwd_workdir(settings: Settings) -> Settings:
    """`hermes chat` works where it was started unless tools.workdir / HERMES_WORKDIR says
    otherwise (SPEC §4)."""
    if settings.tools.workdir is None:
        settings.tools.workdir = Path.cwd()
    return settings


async def _one_shot(runtime: Runtime, query: str, session: str | None) -> None:
    from hermes.agent.turn import TurnRequest
    from hermes.cli.repl import skills
    from hermes.cli.repl.ids import new_session_id
    from hermes.models.errors import ModelError, ModelNotConfiguredError

    session_id = session or new_session_id()
    request = TurnRequest(user_message=query, session_id=session_id, source="cli")
    turn = skills.expand(runtime.settings, query)
    if turn is not None:  # `-q "/<skill> text"` runs the skill; any other text goes as it is
        request.user_message, request.system_extra = turn.user_message, turn.system_extra
    try:
        result = await runtime.agent.run_turn(request)
    except ModelNotConfiguredError as exc:
        await runtime.aclose()
        fail(str(exc), 2)
    except ModelError as exc:
        await runtime.aclose()
        fail(str(exc), 1)
    await runtime.aclose()
    typer.echo(result.content)


async def _interactive(runtime: Runtime, session: str | None, plain: bool) -> None:
    from rich.console import Console

    from hermes.cli.repl import app
    from hermes.cli.repl.ids import new_session_id

    rich = sys.stdout.isatty() and not plain
    console = Console() if rich else Console(force_terminal=False, no_color=True, highlight=False)
    try:
        await app.run(runtime, session or new_session_id(), rich=rich, console=console)
    finally:
        await runtime.aclose()
