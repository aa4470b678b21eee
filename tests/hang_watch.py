"""A test that runs far past any test's time is stopped, after saying where it waits.

Why: a test that awaits something that never comes holds its pytest-xdist worker, and the run,
forever; CI then ends by being killed and says nothing about where. Past `HERMES_TEST_HANG_S`
seconds (default 240; the slowest test takes under a minute on a loaded machine) this prints
every thread's stack and every pending asyncio task's stack to stderr and ends the worker
process: pytest-xdist reports that test as failed ("worker crashed") and goes on with a new
worker. `0` turns it off (a debugger session)."""

from __future__ import annotations

import asyncio
import faulthandler
import os
import sys
import threading
from collections.abc import Iterator

import pytest

DEFAULT_S = 240.0


def limit() -> float:
    try:
        return float(os.environ.get("HERMES_TEST_HANG_S", DEFAULT_S))
    except ValueError:
        return DEFAULT_S


def pending_tasks() -> list[asyncio.Task[object]]:
    """Every asyncio task not done yet, of any event loop in this process. Read from another
    thread while the loop waits: asyncio keeps all tasks in one weak set (CPython 3.11+)."""
    return [task for task in list(asyncio.tasks._all_tasks) if not task.done()]


def report(nodeid: str, seconds: float) -> None:
    out = sys.stderr
    print(f"\n!!! {nodeid} still running after {seconds:.0f} s: stopping this worker", file=out)
    for task in pending_tasks():
        print(f"--- asyncio task {task.get_name()}: {task.get_coro()!r}", file=out)
        task.print_stack(limit=30, file=out)
    print("--- threads", file=out, flush=True)
    faulthandler.dump_traceback(file=out, all_threads=True)
    out.flush()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    seconds = limit()
    if seconds <= 0:
        yield
        return

    def stop() -> None:
        capture = item.config.pluginmanager.getplugin("capturemanager")
        if capture is not None:  # else the report goes to the test's captured output, unread
            capture.suspend_global_capture(in_=True)
        report(item.nodeid, seconds)
        os._exit(70)

    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
