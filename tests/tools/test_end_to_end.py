"""One task end to end through a real turn: the model writes a file, runs its test (failing),
patches the bug, runs the test again (passing) and reports. Tool results are what the model
sees, and what is stored."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hermes.agent.turn import TurnRequest
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

CODE = """def add(a, b):
    return a - b


assert add(2, 3) == 5, "add is broken"
print("all good")
"""


async def test_write_test_patch_retest(runtime: Runtime, fake: FakeModel, workdir: Path) -> None:
    run = f"{sys.executable} calc.py"
    fake.enqueue(
        ToolCalls([("write_file", {"path": "calc.py", "content": CODE})]),
        ToolCalls([("terminal", {"command": run})]),
        ToolCalls([("patch", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]),
        ToolCalls([("terminal", {"command": run})]),
        Text("Fixed add(); the test passes."),
    )
    result = await runtime.agent.run_turn(TurnRequest("write and fix calc.py", session_id="e2e"))
    assert result.content == "Fixed add(); the test passes."
    assert (workdir / "calc.py").read_text() == CODE.replace("a - b", "a + b")

    last = fake.chat_requests()[-1]
    results = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert results[0].startswith("Created calc.py")
    assert "add is broken" in results[1] and "[exit code 1" in results[1]
    assert "-    return a - b" in results[2] and "+    return a + b" in results[2]
    assert "all good" in results[3] and "[exit code 0" in results[3]

    stored = runtime.store.get_messages("default", "e2e")
    assert [m.tool_name for m in stored if m.role == "tool"] == [
        "write_file",
        "terminal",
        "patch",
        "terminal",
    ]
    assert json.dumps([m.content for m in stored]).count("all good") >= 1
