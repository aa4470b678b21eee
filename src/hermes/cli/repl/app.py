"""The prompt loop of `hermes chat`: read a line (multiline, history, completion), run it."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console

from hermes.cli.repl import commands, skills
from hermes.cli.repl.completion import Cached, ChatCompleter
from hermes.cli.repl.notices import NotesWatcher
from hermes.cli.repl.session import ChatSession
from hermes.cli.repl.usage import endpoint_models
from hermes.runtime import Runtime

ReadLine = Callable[[str], Awaitable[str]]
WELCOME = (
    "[bold]Hermes[/bold] · session [cyan]{session}[/cyan] · model [cyan]{model}[/cyan]\n"
    "[dim]/help for commands · Enter sends · Alt-Enter or \\ + Enter for a new line · "
    "Ctrl-C stops a turn · Ctrl-D exits[/dim]"
)


def _prompt_reader(chat: ChatSession) -> tuple[ReadLine, ReadLine]:
    """(read a chat line, ask a one-off question), both prompt_toolkit on a terminal."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event) -> None:  # type: ignore[no-untyped-def]
        event.current_buffer.insert_text("\n")

    @bindings.add("enter")
    def _enter(event) -> None:  # type: ignore[no-untyped-def]
        buffer = event.current_buffer
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    history = private_history(chat.runtime.settings.home)
    store, settings = chat.store, chat.runtime.settings

    def sessions() -> list[tuple[str, str]]:
        return [
            (s.id, f"{s.message_count} msgs") for s in store.list_sessions(chat.scope, limit=50)
        ]

    def models() -> list[tuple[str, str]]:
        cached = chat.cache.get("models")
        return [(str(m.get("id")), "") for m in cached] if isinstance(cached, list) else []

    completer = ChatCompleter(
        [(c.name, c.help) for c in commands.COMMANDS] + [("/exit", "leave")],
        Cached(lambda: skills.skill_list(settings), 30.0),
        Cached(sessions),
        models,
        lambda: endpoint_models(chat),
    )
    main: PromptSession[str] = PromptSession(
        history=FileHistory(str(history)),
        completer=completer,
        complete_while_typing=False,
        auto_suggest=AutoSuggestFromHistory(),
        key_bindings=bindings,
        multiline=True,
        prompt_continuation=lambda width, line, soft: "… ".rjust(width),
    )
    questions: PromptSession[str] = PromptSession()
    return main.prompt_async, questions.prompt_async


def private_history(home: Path) -> Path:
    """`logs/chat_history`, made 0600 before prompt_toolkit appends to it: it holds every line
    typed (keys pasted into the chat included), so like the other files of the home only its
    owner may read it. A file left 0644 by an older version is tightened too."""
    history = home / "logs" / "chat_history"
    history.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(history, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    os.chmod(history, 0o600)
    return history


async def _stdin_line(message: str) -> str:
    """No terminal on stdin (piped input): one plain line per call, EOF at the end."""
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line:
        raise EOFError
    return line.rstrip("\n")


async def announce_background_saves(chat: ChatSession, watcher: NotesWatcher) -> None:
    """After a turn, wait for the background memory review and tell what it saved, above
    the prompt the user may already be typing at."""
    from prompt_toolkit.application import run_in_terminal

    await chat.runtime.agent.drain()
    lines = watcher.changes()

    def show() -> None:
        for line in lines:
            chat.notice(line)

    if lines:
        await run_in_terminal(show)


async def run(runtime: Runtime, session_id: str, *, rich: bool, console: Console) -> None:
    chat = ChatSession(runtime, console, session_id=session_id, rich=rich, ask=_stdin_line)
    interactive = sys.stdin.isatty()
    read, chat.ask = _prompt_reader(chat) if interactive else (_stdin_line, _stdin_line)
    model = runtime.model.model or "(not set)"
    chat.print(WELCOME.format(session=session_id, model=model))
    if not (runtime.settings.model.base_url and runtime.settings.model.name):
        chat.print(
            "[yellow]No model is configured yet: run `hermes setup` (it finds local model "
            "servers), or set OPENAI_BASE_URL and HERMES_MODEL.[/yellow]"
        )
    watcher = NotesWatcher(runtime.settings, chat.scope)
    announcer: asyncio.Task[None] | None = None
    ctrl_c = False
    try:
        while not chat.exit_requested:
            for line in watcher.changes():
                chat.notice(line)
            try:
                text = (await read("› " if rich else "> ")).strip()
            except KeyboardInterrupt:
                if ctrl_c or chat.interrupted:
                    break
                ctrl_c = True
                chat.print("[dim](Ctrl-C again or Ctrl-D to exit)[/dim]")
                continue
            except EOFError:
                break
            ctrl_c, chat.interrupted = False, False
            if text.lower() in commands.EXIT:
                break
            if not text:
                continue
            await _handle(chat, text)
            if interactive:
                if announcer is not None:
                    announcer.cancel()
                announcer = asyncio.create_task(announce_background_saves(chat, watcher))
    finally:
        if announcer is not None:
            announcer.cancel()
        chat.runtime.agent.end_session(chat.scope, chat.session_id)  # leaving ends it


async def _handle(chat: ChatSession, text: str) -> None:
    """Run a typed line: a slash command, or a turn (`//text` sends text starting with /)."""
    if text.startswith("/") and not text.startswith("//"):
        if not await commands.dispatch(chat, text):
            chat.say(f"Unknown command {text.split()[0]}. /help lists them.")
        return
    await chat.send(text[1:] if text.startswith("//") else text)
