"""`hermes` parses its command line with the garbage collector paused and a command begins
with it back on, what the start built frozen (`hermes.collector`, issue #44: cold start)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import gc, sys

from hermes.cli.main import app, run


@app.command("gc-state")
def gc_state() -> None:
    print(gc.isenabled(), gc.get_freeze_count() > 0)


sys.argv = ["hermes", "gc-state"]
run()
"""


def test_a_command_begins_with_the_collector_on_and_the_start_frozen(home: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "True True\n"), done.stderr
