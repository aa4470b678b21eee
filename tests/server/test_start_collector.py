"""`hermes serve` starts with the garbage collector paused and freezes what the start built
once its app has started (issue #44, cold start): run in a process of its own, as the server's
entry point runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import gc, json, socket, threading
from hermes.config.settings import load_settings
from hermes.server.serve import ServeError, run

settings = load_settings()
collections = []
gc.callbacks.append(lambda phase, info: phase == "stop" and collections.append(info))
stop = threading.Event()
seen = {}

def announce(line):
    if "listening" in line and not seen:
        seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count(), collections=len(collections))
        stop.set()

run(settings, "127.0.0.1", 0, announce=announce, stop_when=stop)
print(json.dumps(seen))

gc.unfreeze()
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen()
try:
    run(settings, "127.0.0.1", busy.getsockname()[1])
except ServeError:
    pass
print(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}))
"""


def _probe(home: Path) -> list[dict[str, int]]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    env.pop("HERMES_API_KEY", None)
    run = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, env=env
    )
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.strip().splitlines()[-2:]]


def test_the_start_runs_without_collections_and_is_frozen_once_it_serves(tmp_path: Path) -> None:
    served, refused = _probe(tmp_path / "home")
    # no collection walked the objects the start built, and they are in the permanent
    # generation by the time the server says it listens, with the collector back on
    assert served["collections"] == 0
    assert served["enabled"]
    assert served["frozen"] > 10_000
    # a start that fails resumes the collector and freezes nothing
    assert refused == {"enabled": True, "frozen": 0}
