"""`hermes` ends a finished command's process without the interpreter's teardown
(`hermes.cli.quick_exit`, issue #44: store-only commands ≤ 0.3 s): everything else the
process does at its end is unchanged: its whole output (through a pipe, so buffered), the
command's exit status, `atexit` handlers; and with another thread still running it exits the
usual way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import atexit, os, sys, threading


class TornDown:
    write = staticmethod(os.write)  # still there while the interpreter tears down

    def __del__(self):
        self.write(2, b"torn down\\n")


kept = TornDown()  # freed by the interpreter's teardown, if there is one
atexit.register(lambda: print("atexit ran", file=sys.stderr))
if sys.argv[1] == "--with-thread":
    del sys.argv[1]
    threading.Thread(target=threading.Event().wait, args=(3,)).start()  # outlives the command
sys.argv = ["hermes", *sys.argv[1:]]
from hermes.cli.main import run

run()
"""


def _hermes(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60
    )


def test_a_finished_command_skips_the_teardown_and_keeps_the_rest(home: Path) -> None:
    helped = _hermes("--help")
    assert helped.returncode == 0, helped.stderr
    assert "sessions" in helped.stdout
    assert helped.stdout.endswith("╯\n\n")  # the whole of it
    assert helped.stderr.splitlines() == ["atexit ran"]  # and no "torn down"

    listed = _hermes("sessions", "list")
    assert (listed.returncode, listed.stdout) == (0, "No sessions yet.\n"), listed.stderr
    assert "torn down" not in listed.stderr


def test_a_failing_command_keeps_its_status_and_message(home: Path) -> None:
    missing = _hermes("sessions", "show", "no-such-session")
    assert missing.returncode == 1
    assert "no-such-session" in missing.stderr
    assert "atexit ran" in missing.stderr
    usage = _hermes("sessions", "no-such-command")
    assert usage.returncode == 2
    assert "No such command" in usage.stderr


def test_with_another_thread_running_the_process_exits_the_usual_way(home: Path) -> None:
    listed = _hermes("--with-thread", "sessions", "list")
    assert (listed.returncode, listed.stdout) == (0, "No sessions yet.\n"), listed.stderr
    assert listed.stderr.splitlines() == ["atexit ran", "torn down"]
