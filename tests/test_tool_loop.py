"""`run_tool_loop`, the one loop a turn, the reviews and sub-agents run: how it ends."""

from __future__ import annotations

from typing import Any

from hermes.agent.tool_loop import Limits, run_tool_loop
from hermes.models.types import Completion, ToolCall


def _calls(n: int) -> Completion:
    return Completion(content=None, tool_calls=[ToolCall(f"c{n}", "noop", "{}")])


class Script:
    """Replies in order; records whether each call offered tools and what the model saw."""

    def __init__(self, *replies: Completion) -> None:
        self.replies = list(replies)
        self.offered: list[bool] = []
        self.seen: list[list[dict[str, Any]]] = []
        self.transcript: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        self.acted = 0

    async def ask(self, tools: bool) -> Completion:
        self.offered.append(tools)
        self.seen.append(list(self.transcript))
        return self.replies.pop(0)

    async def act(self, completion: Completion) -> bool:
        self.acted += 1
        return False


async def test_an_answer_ends_the_loop_at_its_step() -> None:
    script = Script(_calls(1), Completion(content="done"))
    end = await run_tool_loop(script.ask, script.act, Limits(5), script.transcript)
    assert (end.how, end.steps, script.acted) == ("answer", 2, 1)
    assert end.completion is not None and end.completion.content == "done"


async def test_out_of_steps_without_a_closing_note_it_just_stops() -> None:
    script = Script(_calls(1), _calls(2), Completion(content="never asked"))
    end = await run_tool_loop(script.ask, script.act, Limits(2), script.transcript)
    assert (end.how, end.steps, script.offered) == ("limit", 2, [True, True])
    assert len(script.replies) == 1


async def test_the_closing_call_offers_no_tools_and_its_note_is_taken_out_again() -> None:
    script = Script(_calls(1), Completion(content="report"))
    end = await run_tool_loop(script.ask, script.act, Limits(1, "stop now"), script.transcript)
    assert (end.how, end.steps, script.offered) == ("closed", 1, [True, False])
    assert script.seen[-1][-1] == {"role": "system", "content": "stop now"}
    assert script.transcript == [{"role": "user", "content": "go"}]


async def test_act_may_end_the_loop_after_its_step() -> None:
    script = Script(_calls(1), Completion(content="never asked"))

    async def stop(completion: Completion) -> bool:
        return True

    end = await run_tool_loop(script.ask, stop, Limits(3, "note"), script.transcript)
    assert (end.how, end.steps) == ("stopped", 1)
    assert end.completion is not None and end.completion.tool_calls[0].id == "c1"


async def test_no_steps_at_all_goes_straight_to_the_closing_call() -> None:
    script = Script(Completion(content="answer"))
    end = await run_tool_loop(script.ask, script.act, Limits(0, "note"), script.transcript)
    assert (end.how, end.steps, script.offered) == ("closed", 0, [False])
