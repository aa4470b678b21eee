"""End a finished command's process without tearing the interpreter down.

After a command returns, Python's finalisation frees every object of every module one by one
(pydantic's validators and schemas, typer's commands, the settings' models…) before the
process can end: for a store-only command that was about a third of its CPU time, spent on
memory the operating system takes back at once anyway. Once the command's own work is done
(its store closed, its output written), the process ends as the interpreter would end it, less
that teardown: `atexit` handlers run, the standard streams are flushed and the status is the
one `sys.exit` was given. When another thread still runs (the interpreter would wait for it)
or a stream cannot be flushed (a closed pipe, which the interpreter reports), the caller
exits the usual way.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading


def exit_now(code: object) -> None:
    """End the process with the status `sys.exit(code)` gives, skipping the teardown; returns
    (and the caller exits as usual) when that would change what the process does."""
    if isinstance(code, bool) or not (code is None or isinstance(code, int)):
        return  # `sys.exit("message")` prints the message: leave it to the interpreter
    if threading.active_count() > 1 or threading.current_thread() is not threading.main_thread():
        return
    if not _flushed():
        return
    atexit._run_exitfuncs()  # logging.shutdown and any handler a library registered
    _flushed()
    os._exit(code or 0)


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True
