"""A test that hangs is stopped with the place it waits named (tests/hang_watch.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_hanging_test_is_stopped_and_says_what_it_awaits(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.hang_watch"]\n')
    (tmp_path / "test_stuck.py").write_text(
        "import asyncio\n\n"
        "async def never_set(event):\n"
        "    await event.wait()\n\n"
        "async def test_stuck():\n"
        "    await asyncio.get_running_loop().create_task(never_set(asyncio.Event()))\n"
    )
    env = {
        **os.environ,
        "HERMES_TEST_HANG_S": "1",
        "PYTHONPATH": str(ROOT),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # only what this needs: seconds less
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "pytest_asyncio.plugin",
            "-o",
            "asyncio_mode=auto",
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 70, done.stdout + done.stderr
    assert "test_stuck.py::test_stuck still running after 1 s" in done.stderr
    assert "in never_set" in done.stderr  # the awaiting task's own frame
    assert "await event.wait()" in done.stderr
