"""The approval prompt of interactive `hermes chat`, in a real pseudo-terminal, and the
PromptApprover's answers."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from hermes.cli.approval import PromptApprover
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from hermes.tools.approval import ApprovalRequest
from tests.conftest import chat_in_pty

REQUEST = ApprovalRequest("terminal", "rm -rf build", "deletes files", "default", "s")


async def test_answers_map_to_decisions_and_silence_is_deny() -> None:
    answers = iter(["maybe", "S"])

    async def ask(_: str) -> str:
        return next(answers)

    out = io.StringIO()
    approver = PromptApprover(Console(file=out), ask)
    assert await approver.approve(REQUEST) == "session"
    assert "rm -rf build" in out.getvalue() and "Answer o, s, a or d" in out.getvalue()

    async def eof(_: str) -> str:
        raise EOFError

    assert await PromptApprover(Console(file=io.StringIO()), eof).approve(REQUEST) == "deny"


def test_hermes_chat_asks_before_a_dangerous_command(
    model_env: dict, fake: FakeModel, tmp_path: Path
) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "drop").mkdir()
    fake.enqueue(
        ToolCalls([("terminal", {"command": "rm -rf keep"})]),
        Text("kept it"),
        ToolCalls([("terminal", {"command": "rm -rf drop"})]),
        Text("dropped it"),
    )
    with chat_in_pty(cwd=tmp_path) as child:
        child.sendline("remove keep")
        child.expect("Approval needed")
        child.expect("allow\\?")
        child.sendline("d")
        child.expect("kept it")
        child.sendline("remove drop")
        child.expect("allow\\?")
        child.sendline("o")
        child.expect("dropped it")
    assert (tmp_path / "keep").is_dir() and not (tmp_path / "drop").exists()
