"""The interactive `hermes chat` in a real pseudo-terminal (prompt_toolkit needs a tty)."""

import json

from hermes.testing.fake_model import FakeModel, Text
from tests.conftest import chat_in_pty, run_cli


def test_interactive_chat_streams_and_handles_commands(model_env: dict, fake: FakeModel) -> None:
    fake.enqueue(Text("Hi there, streaming works", chunk_chars=3), Text("second session answer"))
    with chat_in_pty("--session", "tty-1") as child:
        child.sendline("hello")
        child.expect("streaming works")
        child.sendline("/help")
        child.expect("start a new session")
        child.sendline("/bogus")
        child.expect("Unknown command")
        child.sendline("/new")
        child.expect("New session")
        child.sendline("again")
        child.expect("second session answer")
    assert child.exitstatus == 0
    assert fake.chat_requests()[0].get("stream") is True
    sessions = json.loads(run_cli("sessions", "list", "--json").stdout)
    assert {s["id"] for s in sessions} >= {"tty-1"} and len(sessions) == 2
    # the second session did not see the first one's history
    assert [m["content"] for m in fake.chat_requests()[1]["messages"][1:]] == ["again"]


def test_the_chat_history_file_is_private(model_env: dict, fake: FakeModel, home) -> None:
    history = home / "logs" / "chat_history"
    history.parent.mkdir(parents=True)
    history.write_text("")
    history.chmod(0o644)  # as an older version left it
    fake.enqueue(Text("noted"))
    with chat_in_pty("--session", "private") as child:
        child.sendline("my secret is swordfish")
        child.expect("noted")
    assert "swordfish" in history.read_text()
    assert history.stat().st_mode & 0o777 == 0o600
    history.unlink()  # a new one is created private as well
    with chat_in_pty("--session", "private"):
        pass
    assert history.stat().st_mode & 0o777 == 0o600
