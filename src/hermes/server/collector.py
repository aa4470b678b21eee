"""The cyclic garbage collector paused while `hermes serve` starts, and what the start built
frozen once the server is ready.

A start imports FastAPI, pydantic and the parts and builds the app: some hundred thousand
objects that live as long as the process. The collector, run as they are allocated, walks
them over and over (young collections by the hundred, a full one on the way) and finds almost
nothing to free. Paused for the start, and those objects moved to the permanent generation
(`gc.freeze`) once it is over, the start does not pay for those walks and no later full
collection walks them again; the few cycles a start leaves behind are kept.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def paused_until_ready() -> Iterator[Callable[[], None]]:
    """Pause the collector and yield `ready`: called once the start is over, it freezes every
    object alive and resumes the collector. Leaving the block resumes it too (a start that
    failed freezes nothing). Only the main thread's caller owns the process: in another
    thread (a server run by another program) the collector is left alone."""
    owned = threading.current_thread() is threading.main_thread() and gc.isenabled()

    def ready() -> None:
        nonlocal owned
        if owned:
            owned = False
            gc.freeze()
            gc.enable()

    if owned:
        gc.disable()
    try:
        yield ready
    finally:
        if owned:
            gc.enable()
