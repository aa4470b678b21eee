"""delegate_task through real turns: a sub-agent with its own context and a narrower toolset,
a step limit, parallel tasks, and no further delegation or memory writes."""

from __future__ import annotations

from pathlib import Path

from hermes.agent.turn import TurnRequest
from hermes.config.settings import Settings
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Text, ToolCalls


def _is_sub(body: dict) -> bool:
    return "You are a sub-agent" in body["messages"][0]["content"]


def _goal_is(goal: str):  # type: ignore[no-untyped-def]
    return lambda body: _is_sub(body) and body["messages"][1]["content"].startswith(goal)


def _main(body: dict) -> bool:
    return not _is_sub(body)


async def test_a_sub_agent_works_in_its_own_context(
    runtime: Runtime, fake: FakeModel, workdir: Path
) -> None:
    fake.enqueue(
        ToolCalls([("delegate_task", {"goal": "write hello.txt", "context": "say hi"})]),
        when=_main,
    )
    fake.enqueue(
        ToolCalls([("write_file", {"path": "hello.txt", "content": "hi\n"})]),
        ToolCalls([("delegate_task", {"goal": "go deeper"}), ("memory", {"action": "add"})]),
        Text("Wrote hello.txt."),
        when=_is_sub,
    )
    fake.enqueue(Text("The sub-agent wrote it."), when=_main)
    result = await runtime.agent.run_turn(TurnRequest("secret parent talk", session_id="d"))
    assert result.content == "The sub-agent wrote it."
    assert (workdir / "hello.txt").read_text() == "hi\n"

    sub = [r for r in fake.chat_requests() if _is_sub(r)]
    first = sub[0]
    assert len(first["messages"]) == 2 and "secret parent talk" not in str(first)
    assert "say hi" in first["messages"][1]["content"]
    offered = {t["function"]["name"] for t in first["tools"]}
    assert "write_file" in offered and not offered & {"delegate_task", "memory", "cronjob"}
    refusals = [m["content"] for m in sub[2]["messages"] if m["role"] == "tool"][-2:]
    assert all("no tool named" in text for text in refusals)

    parent_result = [m for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"][0]
    report = parent_result["content"]
    assert "Answer: Wrote hello.txt." in report
    assert "write_file(path='hello.txt'" in report and "Trace (3 steps)" in report


async def test_parallel_tasks_step_limit_and_subsets(
    runtime: Runtime, fake: FakeModel, settings: Settings, workdir: Path
) -> None:
    settings.tools.delegate.max_steps = 2
    fake.enqueue(
        ToolCalls(
            [("delegate_task", {"tasks": ["alpha", "beta", "gamma"], "toolsets": ["files"]})]
        ),
        when=_main,
    )
    for goal in ("alpha", "beta"):
        fake.enqueue(Text(f"{goal} done"), when=_goal_is(goal))
    fake.enqueue(
        ToolCalls([("search_files", {"pattern": "x"})]),
        ToolCalls([("search_files", {"pattern": "y"})]),
        Text("gamma partial"),
        when=_goal_is("gamma"),
    )
    fake.enqueue(Text("all three reported"), when=_main)
    result = await runtime.agent.run_turn(TurnRequest("fan out", session_id="p"))
    assert result.content == "all three reported"
    report = [m for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "[task 1/3] alpha\nAnswer: alpha done" in report
    assert "Answer: gamma partial" in report and "step limit (2)" in report
    sub_tools = {
        t["function"]["name"]
        for r in fake.chat_requests()
        if _is_sub(r)
        for t in r.get("tools") or []
    }
    assert sub_tools == {"read_file", "write_file", "patch", "search_files"}
    fake.assert_complete()


async def test_bad_delegations_are_errors_the_model_can_read(
    runtime: Runtime, fake: FakeModel, workdir: Path
) -> None:
    fake.enqueue(
        ToolCalls([("delegate_task", {"tasks": ["a", "b", "c", "d"]})]),
        ToolCalls([("delegate_task", {"goal": "x", "toolsets": ["nothing-like-this"]})]),
        ToolCalls([("delegate_task", {})]),
        Text("ok"),
    )
    await runtime.agent.run_turn(TurnRequest("try", session_id="bad"))
    results = [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    assert "at most 3" in results[0]
    assert "available to a sub-agent" in results[1]
    assert "give a goal" in results[2]
