"""README's "Use it from your framework" snippets run as written (only the URL is changed), so
they cannot go stale. The fake model answers like a cooperative model would: the schema's
JSON when asked for structured output, the required tool when one is forced, a weather call
when the weather tool is offered and not yet answered, else plain text."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.testing.fake_model import Response, Text, ToolCalls
from tests.compat.conftest import Hermes

README = Path(__file__).resolve().parents[2] / "README.md"
CITY = {"name": "Lyon", "country": "France"}
OURS = {"get_weather", "add", "lookup_secret"}  # the snippets' tool and the server's own


def _section_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use it from your framework", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _forced_tool(body: dict[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice["function"]["name"])
    if choice == "required":
        names = [t["function"]["name"] for t in body.get("tools", [])]
        return next((n for n in names if n not in OURS), "get_weather")
    return None


def cooperative(body: dict[str, Any]) -> Response:
    if body.get("response_format", {}).get("type") == "json_schema":
        return Text(json.dumps(CITY))
    forced = _forced_tool(body)
    if forced is not None:
        return ToolCalls([(forced, CITY if forced != "get_weather" else {"city": "Oslo"})])
    names = [t["function"]["name"] for t in body.get("tools", [])]
    last = body["messages"][-1]
    if "get_weather" in names and last["role"] != "tool":
        return ToolCalls([("get_weather", {"city": "Oslo"})])
    output_tool = next((n for n in names if n not in OURS), None)
    if output_tool is not None:  # pydantic-ai's and the Agents SDK's way to end with a result
        return ToolCalls([(output_tool, CITY)])
    return Text("Rain in Oslo, Alex.")


def _close_leftover_loop() -> None:
    """`run_sync` helpers (pydantic-ai) leave their event loop set on the thread, unclosed."""
    policy = asyncio.get_event_loop_policy()
    with contextlib.suppress(RuntimeError):
        loop = policy.get_event_loop()
        if not loop.is_running():
            loop.close()
            policy.set_event_loop(None)


@pytest.fixture
def answering(hermes: Hermes) -> Iterator[Hermes]:
    hermes.fake.default = cooperative
    try:
        yield hermes
    finally:
        hermes.fake.default = None


# pydantic-ai's run_sync leaves an async generator to its own event loop's shutdown: a warning
# from the library's internals, not something the snippet's reader can act on
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("index", range(len(_section_blocks())))
def test_snippet_runs(answering: Hermes, index: int) -> None:
    blocks = _section_blocks()
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(blocks[0], namespace)  # the shared City and get_weather
    code = blocks[index].replace("http://localhost:11434/v1", answering.base_url)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README block {index}", "exec"), namespace)
    finally:
        _close_leftover_loop()
    if index:
        assert out.getvalue().strip(), "the snippet printed nothing"
