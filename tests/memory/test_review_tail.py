"""The memory review reads the tail of a session, never its whole history."""

from __future__ import annotations

import json
import re

from hermes.agent.turn import TurnRequest
from hermes.memory.review import REVIEW_PROMPT
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from hermes.tools.registry import Toolset, tool


@tool
def echo(text: str) -> str:
    """Repeat the text.

    Args:
        text: what to repeat
    """
    return f"echoed {text}"


def is_review(body: dict) -> bool:
    return REVIEW_PROMPT in json.dumps(body)


def last_review(fake: FakeModel) -> str:
    return [r for r in fake.chat_requests() if is_review(r)][-1]["messages"][-1]["content"]


async def test_review_of_a_long_session_reads_only_its_last_turns(
    runtime: Runtime, fake: FakeModel
) -> None:
    runtime.settings.memory.review_interval = 5
    fake.default = lambda body: Text("Nothing to save." if is_review(body) else "ok")
    for i in range(29):
        await runtime.agent.run_turn(TurnRequest(f"turn-{i:03d}", session_id="long"))
    await runtime.agent.drain()
    reads: list[str] = []
    runtime.store.connection.set_trace_callback(
        lambda sql: reads.append(sql) if "FROM messages WHERE" in sql else None
    )
    await runtime.agent.run_turn(TurnRequest("turn-029", session_id="long"))
    await runtime.agent.drain()
    runtime.store.connection.set_trace_callback(None)
    # 60 messages stored; the review of the last 5 turns starts reading near the end
    starts = [int(m) for sql in reads for m in re.findall(r"idx >= (\d+)", sql)]
    assert starts and min(starts) >= 30
    review = last_review(fake)
    assert all(f"USER: turn-{i:03d}" in review for i in range(25, 30))
    assert "turn-024" not in review


async def test_review_widens_its_read_over_tool_heavy_turns(
    runtime: Runtime, fake: FakeModel
) -> None:
    runtime.settings.memory.review_interval = 2
    fake.default = Text("Nothing to save.")
    for i in range(4):  # 7 messages a turn: more than the first read's guess
        fake.enqueue(
            ToolCalls([("echo", {"text": f"t{i}-{k}"}) for k in range(4)]),
            Text(f"answer {i}"),
            when=lambda body: not is_review(body),
        )
    for i in range(4):
        await runtime.agent.run_turn(
            TurnRequest(f"question {i}", session_id="tools", toolset=Toolset([echo]))
        )
    await runtime.agent.drain()
    review = last_review(fake)
    assert "USER: question 2" in review and "USER: question 3" in review
    assert "echoed t2-0" in review and "answer 3" in review
    assert "question 1" not in review and "t1-3" not in review
