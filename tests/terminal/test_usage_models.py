"""Which model answered: `/usage` in `hermes chat` lists this chat's tokens per model once a
fallback has answered too, and each assistant message keeps the model that wrote it."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator

import pytest
from rich.console import Console

from hermes.cli.repl import commands
from hermes.cli.repl.session import ChatSession
from hermes.config.settings import FallbackModelSettings, Settings
from hermes.runtime import build_runtime
from hermes.testing.fake_model import Error, FakeModel, Text


@pytest.fixture
def backup() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


@pytest.fixture
async def chat(
    settings: Settings, backup: FakeModel
) -> AsyncIterator[tuple[ChatSession, io.StringIO]]:
    settings.model.fallbacks = [
        FallbackModelSettings(name="backup-model", base_url=backup.base_url)
    ]
    settings.model.fallback_cooldown = 0  # the next turn tries the configured model again
    runtime = build_runtime(settings)
    out = io.StringIO()

    async def ask(_: str) -> str:
        raise AssertionError("nothing should be asked")

    console = Console(file=out, force_terminal=False, width=200)
    try:
        yield ChatSession(runtime, console, session_id="one", rich=False, ask=ask), out
    finally:
        await runtime.aclose()


async def usage(session: ChatSession, out: io.StringIO) -> str:
    start = len(out.getvalue())
    assert await commands.dispatch(session, "/usage")
    return out.getvalue()[start:]


async def test_usage_names_every_model_that_answered(
    chat: tuple[ChatSession, io.StringIO], fake: FakeModel, backup: FakeModel
) -> None:
    session, out = chat
    fake.enqueue(Text("from the main model", prompt_tokens=100, completion_tokens=10))
    await session.send("first")
    one_model = await usage(session, out)
    assert "fake-model:" not in one_model  # one model: no breakdown
    fake.enqueue(Error(503, "overloaded"))
    backup.enqueue(Text("from the backup", prompt_tokens=300, completion_tokens=30))
    await session.send("second")
    report = await usage(session, out)
    assert "this chat: 400 prompt + 40 completion tokens over 2 turn(s)" in report
    assert "backup-model: 300 prompt + 30 completion" in report
    assert "fake-model: 100 prompt + 10 completion" in report
    stored = session.store.get_messages(session.scope, "one")
    assert [(m.content, m.model) for m in stored if m.role == "assistant"] == [
        ("from the main model", "fake-model"),
        ("from the backup", "backup-model"),
    ]
    assert [m.model for m in stored if m.role == "user"] == [None, None]
    # /undo takes the backup's turn out of the breakdown with the rest of its figures
    start = len(out.getvalue())
    assert await commands.dispatch(session, "/undo")
    assert "'second'" in out.getvalue()[start:]
    assert "backup-model:" not in await usage(session, out)
