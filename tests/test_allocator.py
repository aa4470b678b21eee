"""`hermes serve` keeps the memory it frees for reuse (`hermes.allocator`): a turn deep into a
session builds its model request from blocks of hundreds of kilobytes, and without the tuning
glibc gives each back to the kernel, so every turn faults all its pages in again. Measured
in processes of their own, as the allocator's settings are process-wide."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.allocator import operator_tuned

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")

FAULTS = """
import resource

def faults_per_request(size=400_000, requests=100):
    text = "x" * 1000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for i in range(requests):
        body = (text * (size // 1000) + str(i)).encode()  # a request's str, then its bytes
        del body
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / requests
"""

AS_IS = FAULTS + "print(faults_per_request())"

SERVED = (
    FAULTS
    + """
import json, threading
from hermes.config.settings import load_settings
from hermes.server.serve import run

stop = threading.Event()
seen = {}

def announce(line):
    if "listening" in line and not seen:
        faults_per_request()  # the heap grows once
        seen["faults"] = faults_per_request()
        stop.set()

run(load_settings(), "127.0.0.1", 0, announce=announce, stop_when=stop)
print(json.dumps(seen))
"""
)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop("GLIBC_TUNABLES", None)
    env.pop("HERMES_API_KEY", None)
    return {**env, **extra}


def _python(code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_server_reuses_freed_blocks_instead_of_faulting_them_in_again(tmp_path: Path) -> None:
    untuned = float(_python(AS_IS, _clean_env()))
    served = json.loads(_python(SERVED, _clean_env(HERMES_HOME=str(tmp_path / "home"))))
    # a 400 kB block is ~100 pages: faulted in at every request unless the block is reused
    assert untuned > 100
    assert served["faults"] < 10


def test_the_operators_own_allocator_settings_win() -> None:
    assert operator_tuned({"MALLOC_MMAP_THRESHOLD_": "131072"})
    assert operator_tuned({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"})
    assert not operator_tuned({"GLIBC_TUNABLES": "glibc.rtld.nns=4"})
    assert not operator_tuned({})
    tuned_by_hand = _python(
        "from hermes.allocator import keep_freed_memory; print(keep_freed_memory())",
        _clean_env(MALLOC_TRIM_THRESHOLD_="0"),
    )
    assert tuned_by_hand == "False"
