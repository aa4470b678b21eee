"""The chat's slash commands, in process: a ChatSession on a real runtime and the fake model,
with the user's answers scripted."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator

import pytest
from rich.console import Console

from hermes.cli.repl import commands
from hermes.cli.repl.session import ChatSession
from hermes.config.settings import PricingSettings, Settings
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text


class Chat:
    def __init__(self, session: ChatSession, out: io.StringIO, answers: list[str]) -> None:
        self.session, self.out, self.answers = session, out, answers

    async def run(self, line: str) -> str:
        start = len(self.out.getvalue())
        handled = await commands.dispatch(self.session, line)
        assert handled, line
        return self.out.getvalue()[start:]


@pytest.fixture
async def chat(settings: Settings) -> AsyncIterator[Chat]:
    settings.model.context_length = (
        4_000  # small (instructions and tools take ~3,000), so /compress has work
    )
    settings.skills.enabled = False  # the skill tools' schemas alone would fill half of it
    runtime = build_runtime(settings)
    out = io.StringIO()
    answers: list[str] = []

    async def ask(_: str) -> str:
        return answers.pop(0)

    console = Console(file=out, force_terminal=False, width=200)
    session = ChatSession(runtime, console, session_id="one", rich=False, ask=ask)
    try:
        yield Chat(session, out, answers)
    finally:
        await runtime.aclose()


async def test_sessions_resume_by_number_words_and_picking(chat: Chat, fake: FakeModel) -> None:
    fake.enqueue(Text("Go it is"), Text("noted"), Text("sure"))
    await chat.session.send("I write my todo app in Go")
    chat.session.session_id = "two"
    await chat.session.send("plan the garden party")
    chat.session.session_id = "three"
    await chat.session.send("something else")
    listing = await chat.run("/sessions")
    assert listing.index("three") < listing.index("two") < listing.index("one")
    assert "plan the garden party" in listing
    assert "Resumed one" in await chat.run("/resume todo app")  # one match: taken
    assert chat.session.session_id == "one"
    assert "you: I write my todo app in Go" in await chat.run("/resume one")
    chat.answers.append("2")
    picked = await chat.run("/resume")
    assert "resume which" not in picked and "Resumed two" in picked  # asked through `ask`
    assert "Resumed three" in await chat.run("/resume 1")
    assert "No session matches 'zebra'" in await chat.run("/resume zebra")


async def test_usage_model_tools_memory_help(chat: Chat, fake: FakeModel) -> None:
    fake.enqueue(Text("hi", prompt_tokens=1_000, completion_tokens=500))
    await chat.session.send("hello")
    usage = await chat.run("/usage")
    assert "1,000 prompt + 500 completion tokens over 1 turn(s)" in usage
    assert "cost: unknown" in usage
    chat.session.runtime.settings.model.pricing = PricingSettings(input=3.0, output=15.0)
    assert "$0.0105" in await chat.run("/usage")  # 1000 × $3/M + 500 × $15/M
    model = await chat.run("/model")
    assert "model: fake-model" in model and "offers: fake-model" in model
    assert "Now using other-model for this chat (the endpoint does not list it" in await chat.run(
        "/model other-model"
    )
    assert chat.session.runtime.model.model == "other-model"
    tools = await chat.run("/tools")
    assert "read_file" in tools and "terminal" in tools
    (chat.session.runtime.settings.home / "memories" / "MEMORY.md").write_text("uses tabs\n")
    assert "uses tabs" in await chat.run("/memory")
    help_text = await chat.run("/help")
    assert all(c.name in help_text for c in commands.COMMANDS)
    assert not await commands.dispatch(chat.session, "/bogus")


async def test_compress_now_summarises_the_older_part(chat: Chat, fake: FakeModel) -> None:
    chat.session.runtime.settings.compression.enabled = False  # only /compress compresses
    assert "Nothing to compress yet" in await chat.run("/compress")
    for i in range(6):
        fake.enqueue(Text(f"answer {i} " + "words " * 60))
        await chat.session.send(f"question {i} " + "padding " * 60)
    fake.default = Text("## Goal\nsummary of the early questions")  # flush and summary calls
    out = await chat.run("/compress")
    assert out.startswith("Compressed: "), out
    assert chat.session.runtime.store.latest_compaction("default", "one") is not None


async def test_a_compression_during_a_turn_shows_a_notice(chat: Chat, fake: FakeModel) -> None:
    fake.default = Text("fine " * 60)  # answers, the memory flush and the summary alike
    for i in range(8):
        await chat.session.send(f"question {i} " + "padding " * 200)
    assert "-- compressed " in chat.out.getvalue()
    assert "into a summary (threshold)" in chat.out.getvalue()


async def test_undo_and_retry_say_when_there_is_nothing(chat: Chat, fake: FakeModel) -> None:
    assert "Nothing to undo" in await chat.run("/undo")
    assert "Nothing to retry" in await chat.run("/retry")
    fake.enqueue(Text("first"), Text("again"))
    await chat.session.send("ask")
    assert "retrying: ask" in await chat.run("/retry")
    users = [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "user"]
    assert users == ["ask"]


def test_chat_reads_piped_lines_and_prints_plain_text(model_env: dict, fake: FakeModel) -> None:
    from tests.conftest import run_cli

    fake.enqueue(Text("**plain** answer"), Text("after undo"))
    result = run_cli("chat", "--session", "piped", input="hello\n/undo\nagain\n/bogus\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "**plain** answer\n" in out and "\x1b[" not in out  # not a terminal: as written
    assert "Took back: 'hello'" in out and "after undo" in out and "Unknown command /bogus" in out
    users = [m["content"] for m in fake.chat_requests()[1]["messages"] if m["role"] == "user"]
    assert users == ["again"]
    shown = run_cli("sessions", "show", "piped").stdout
    assert "user (undone: not in the prompt): hello" in shown and "user: again" in shown


async def test_background_memory_saves_are_announced(chat: Chat, fake: FakeModel) -> None:
    from hermes.cli.repl.app import announce_background_saves
    from hermes.cli.repl.notices import NotesWatcher

    settings = chat.session.runtime.settings
    gate = asyncio.Event()

    async def review(result: object, agent: object) -> None:  # a slow after-turn pass
        await gate.wait()
        (settings.home / "memories" / "USER.md").write_text("Prefers Go\n")

    chat.session.runtime.agent.after_turn.append(review)
    watcher = NotesWatcher(settings, "default")
    fake.enqueue(Text("ok"))
    await chat.session.send("I like Go")
    announcing = asyncio.create_task(announce_background_saves(chat.session, watcher))
    await asyncio.sleep(0)
    assert "noted about you" not in chat.out.getvalue()  # still waiting for the review
    gate.set()
    await announcing
    assert "-- memory: noted about you: Prefers Go" in chat.out.getvalue()


def test_chat_without_a_model_says_how_to_set_one_up() -> None:
    from tests.conftest import run_cli

    result = run_cli("chat", input="hello\n")
    assert result.returncode == 0
    assert "run `hermes setup`" in result.stdout


async def test_skills_listed_completed_and_run(chat: Chat, fake: FakeModel) -> None:
    from hermes.cli.repl import skills

    chat.session.runtime.settings.skills.enabled = True  # the fixture turns them off
    listing = await chat.run("/skills")
    assert "/summarize-document" in listing and "/daily-briefing" in listing  # the starters
    names = [name for name, _ in skills.skill_list(chat.session.runtime.settings)]
    assert "summarize-document" in names
    fake.enqueue(Text("a short summary"))
    out = await chat.run("/summarize-document the attached minutes")
    assert "skill: summarize-document" in out and "a short summary" in out
    request = fake.chat_requests()[-1]["messages"]
    assert request[-1] == {"role": "user", "content": "the attached minutes"}
    assert any(
        m["role"] == "system" and 'invoked the "summarize-document" skill' in m["content"]
        for m in request
    )
    chat.session.runtime.settings.skills.enabled = False
    assert "skills are off" in await chat.run("/skills")
