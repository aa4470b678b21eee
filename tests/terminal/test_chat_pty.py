"""The interactive `hermes chat` in a real pseudo-terminal against the fake model: streaming,
tool lines, Ctrl-C, /undo, /retry, completion and /resume, in one run (pty tests are slow)."""

from __future__ import annotations

from pathlib import Path

import pexpect

from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.conftest import spawn_chat

_SGR = r"(?:\x1b\[[0-9;]*m| )*"
"""Styling escapes and spaces between the parts of a rendered line."""
_CSI = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"
"""Any control sequences: a completed word can arrive as its first letters, the cursor's
hide/show and wrap toggles, then the rest, when the renderer draws it in two passes."""


def _user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def test_chat_in_a_terminal(model_env: dict, fake: FakeModel, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("buy milk\n")
    fake.enqueue(
        ToolCalls([("read_file", {"path": "notes.txt"})]),
        Text("alpha beta gamma omega", chunk_chars=6, delay=0.3),
        Text("partial words " * 60, chunk_chars=14, delay=0.15),
    )
    child = spawn_chat("--session", "tty-a", cwd=tmp_path, PROMPT_TOOLKIT_NO_CPR="1")
    try:
        child.expect("/help for commands")
        child.expect("›")
        child.send("what is in my notes?\r")
        child.expect(rf"✓{_SGR}read_file{_SGR}notes\.txt{_SGR}\d+\.\ds")  # the tool's line
        child.expect("alpha")
        assert "omega" not in child.before + child.after  # the rest is still on its way
        child.expect("omega")

        child.send("tell me a long story\r")
        child.expect("partial words partial words")
        child.sendintr()  # Ctrl-C stops the turn, keeps what was said
        child.expect("interrupted: the partial answer is kept")

        child.send("/undo\r")  # takes back the interrupted exchange
        child.expect("Took back: 'tell me a long story'")
        fake.enqueue(Text("first try"), Text("second try"))
        child.send("and now?\r")
        child.expect("first try")
        child.send("/ret\t")  # completion: /ret → /retry
        child.expect(rf"/ret{_CSI}ry")
        child.send("\r")
        child.expect("second try")

        child.send("/new\r")
        child.expect("New session")
        child.send("/resume\r")
        child.expect("resume which")
        child.send("1\r")
        child.expect(f"Resumed{_SGR}tty-a")
        fake.enqueue(Text("back again"))
        child.send("still there?\r")
        child.expect("back again")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    requests = fake.chat_requests()
    # the interrupted story was dropped from the prompt, the first try of "and now?" too
    assert _user_texts(requests[3]) == ["what is in my notes?", "and now?"]
    assert _user_texts(requests[4]) == ["what is in my notes?", "and now?"]
    assert [m["content"] for m in requests[4]["messages"] if m["role"] == "assistant"][-1] == (
        "alpha beta gamma omega"
    )
    # /resume picked tty-a: its history came along
    assert _user_texts(requests[5]) == ["what is in my notes?", "and now?", "still there?"]
