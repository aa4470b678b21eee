"""/usage after /undo, and /sessions in columns: the chat's own figures in the terminal chat
(issue 33), on a real runtime with the fake model."""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator

import pytest
from rich.console import Console

from hermes.cli.repl import commands
from hermes.cli.repl.session import ChatSession
from hermes.config.settings import Settings
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text


class Chat:
    def __init__(self, session: ChatSession, out: io.StringIO) -> None:
        self.session, self.out = session, out

    async def run(self, line: str) -> str:
        start = len(self.out.getvalue())
        assert await commands.dispatch(self.session, line), line
        return self.out.getvalue()[start:]


@pytest.fixture
async def chat(settings: Settings) -> AsyncIterator[Chat]:
    runtime = build_runtime(settings)
    out = io.StringIO()

    async def ask(_: str) -> str:
        raise AssertionError("nothing should be asked")

    console = Console(file=out, force_terminal=False, width=200)
    session = ChatSession(runtime, console, session_id="one", rich=False, ask=ask)
    try:
        yield Chat(session, out)
    finally:
        await runtime.aclose()


def _this_chat(usage: str) -> str:
    [line] = [line for line in usage.splitlines() if line.startswith("this chat:")]
    return line


async def test_undo_takes_the_turn_out_of_this_chats_usage(chat: Chat, fake: FakeModel) -> None:
    fake.enqueue(
        Text("first answer", prompt_tokens=100, completion_tokens=10),
        Text("second answer", prompt_tokens=300, completion_tokens=30),
    )
    await chat.session.send("first")
    await chat.session.send("second")
    assert "400 prompt + 40 completion tokens over 2 turn(s)" in _this_chat(
        await chat.run("/usage")
    )
    undone = await chat.run("/undo")
    assert "'second'" in undone and "300 + 30 tokens no longer count" in undone
    usage = await chat.run("/usage")
    assert "100 prompt + 10 completion tokens over 1 turn(s)" in _this_chat(usage)
    assert "taken back (/undo, /retry): 300 prompt + 30 completion tokens" in usage
    assert "session one: 400 prompt + 40 completion tokens" in usage  # spent is spent
    assert "before /undo" in usage
    fake.enqueue(Text("third answer", prompt_tokens=150, completion_tokens=15))
    await chat.session.send("third")
    usage = await chat.run("/usage")
    assert "250 prompt + 25 completion tokens over 2 turn(s)" in _this_chat(usage)
    assert "before /undo" not in usage


async def test_sessions_are_listed_in_aligned_columns(chat: Chat, fake: FakeModel) -> None:
    fake.enqueue(Text("a"), Text("b"), Text("c"))
    for session_id in ("one", "a-much-longer-session-name", "x"):
        chat.session.session_id = session_id
        await chat.session.send(f"hello from {session_id}")
    rows = [line for line in (await chat.run("/sessions")).splitlines() if "msgs" in line]
    assert len(rows) == 3
    for column in (r"\d{4}-\d\d-\d\d \d\d:\d\d", r"\d+ msgs", r"hello from"):
        starts = {re.search(column, row).start() for row in rows}  # type: ignore[union-attr]
        assert len(starts) == 1, (column, rows)
