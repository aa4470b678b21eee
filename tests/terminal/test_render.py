"""How a turn is drawn: plain text for pipes, rendered Markdown on a terminal, tool lines,
notices; and the small pieces around it (completion, memory notices, progress)."""

from __future__ import annotations

import io
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from rich.console import Console

from hermes.cli.progress import progress
from hermes.cli.repl.completion import Cached, ChatCompleter
from hermes.cli.repl.notices import NotesWatcher
from hermes.cli.repl.render import TurnView, key_argument
from hermes.config.settings import load_settings

MARKDOWN = "Some **bold** text:\n\n```python\ndef f(x):\n    return x\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"


def test_plain_view_writes_the_text_as_it_comes_with_tool_lines() -> None:
    out = io.StringIO()
    view = TurnView(Console(file=out, force_terminal=False, no_color=True), rich=False)
    view.on_delta("Let me look")
    assert out.getvalue() == "Let me look"  # incremental, untouched
    view.on_tool_arguments("c1", "terminal", '{"command": "ls -la\\n  /tmp"}')
    view.on_tool_start("c1", "terminal")
    view.on_tool_end("c1", "terminal", False)
    view.on_notice("compression", "compressed 12 earlier messages into a summary")
    view.on_delta("**done**")
    view.finish("Let me look**done**")
    lines = out.getvalue().splitlines()
    assert lines[0] == "Let me look"
    assert lines[1].startswith("✗ terminal  ls -la /tmp  0.0s")
    assert lines[2] == "-- compressed 12 earlier messages into a summary"
    assert lines[3] == "**done**"


def test_rich_view_renders_markdown_and_keeps_it_all() -> None:
    out = io.StringIO()
    view = TurnView(Console(file=out, force_terminal=True, width=60), rich=True)
    for i in range(0, len(MARKDOWN), 5):
        view.on_delta(MARKDOWN[i : i + 5])
    view.finish(MARKDOWN)
    text = out.getvalue()
    assert "**" not in text and "```" not in text and "|---|" not in text  # rendered, not raw
    assert "bold" in text and "return" in text and "\x1b[" in text  # styled


def test_interrupted_view_says_so_and_nothing_streamed_shows_the_answer() -> None:
    out = io.StringIO()
    view = TurnView(Console(file=out, force_terminal=False), rich=False)
    view.on_tool_start("c1", "web_search")
    view.interrupted()
    assert "✗ web_search" in out.getvalue()
    assert "interrupted: nothing was said yet" in out.getvalue()
    out = io.StringIO()
    TurnView(Console(file=out, force_terminal=False), rich=False).finish("whole answer")
    assert out.getvalue() == "whole answer\n"


def test_key_argument_picks_the_telling_one() -> None:
    assert key_argument("read_file", '{"path": "a.py", "offset": 3}') == "a.py"
    assert (
        key_argument("memory", '{"action": "add", "target": "user", "content": "x"}') == "add user"
    )
    assert (
        key_argument("web_extract", '{"urls": ["https://a", "https://b"]}')
        == "https://a, https://b"
    )
    assert key_argument("mcp_x_y", '{"n": 1, "q": "hello"}') == "hello"
    assert key_argument("terminal", "not json") == ""
    assert len(key_argument("terminal", '{"command": "' + "x" * 200 + '"}')) == 60


def test_completion_of_commands_skills_and_sessions() -> None:
    completer = ChatCompleter(
        [("/resume", ""), ("/retry", ""), ("/help", "")],
        lambda: [("daily-briefing", "morning summary")],
        Cached(lambda: [("tty-a", "4 msgs"), ("work", "2 msgs")]),
    )

    def words(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert words("/re") == ["/resume", "/retry"]
    assert words("/da") == ["/daily-briefing"]
    assert words("/resume t") == ["tty-a"]
    assert words("hello /re") == [] and words("/help x") == []


def test_memory_notices_name_what_was_saved(home: Path) -> None:
    settings = load_settings()
    watcher = NotesWatcher(settings, "default")
    assert watcher.changes() == []
    notes = home / "memories" / "USER.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("Prefers Go\n§\nLives in Lyon\n")
    assert watcher.changes() == [
        "memory: noted about you: Prefers Go",
        "memory: noted about you: Lives in Lyon",
    ]
    notes.write_text("Prefers Go\n")
    assert watcher.changes() == ["memory: 1 USER.md entry removed"]


def test_progress_draws_on_a_terminal_only() -> None:
    out = io.StringIO()
    with progress("importing", 3, console=Console(file=out, force_terminal=True)) as advance:
        advance(3)
    assert "importing" in out.getvalue()
    with progress("quiet") as advance:  # stderr is not a terminal under pytest
        advance(1)


async def test_model_names_are_fetched_when_first_completed() -> None:
    fetched: list[str] = []

    async def fetch() -> None:
        fetched.append("models")

    completer = ChatCompleter(
        [], lambda: [], lambda: [], lambda: [("qwen3:8b", ""), ("llama3.2", "")], fetch
    )
    found = [
        c.text
        async for c in completer.get_completions_async(Document("/model qw"), CompleteEvent())
    ]
    assert found == ["qwen3:8b"] and fetched == ["models"]
