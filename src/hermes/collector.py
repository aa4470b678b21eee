"""The cyclic garbage collector paused while a `hermes` process starts, and what the start
built frozen once it is over.

A start imports typer, pydantic, FastAPI and the parts and builds the app: a great many
objects that live as long as the process. The collector, run as they are allocated, walks
them over and over (many young collections, full ones on the way) and finds almost nothing
to free. Paused for the start, and those objects moved to the permanent generation
(`gc.freeze`) once it is over, the start does not pay for those walks and no later full
collection walks them again; the few cycles a start leaves behind are kept.

The `hermes` entry point pauses it before parsing the command line; a command resumes it when
it begins (`hermes serve` once its app has started). A process that ends the usual way rather
than by `quick_exit` thaws them first, so that its teardown finalizes them as before.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_paused = False
_froze = False


def pause() -> None:
    """Pause the collector for a start, unless it is off already (then it is left off)."""
    global _paused
    if not _paused and gc.isenabled():
        gc.disable()
        _paused = True


def started() -> None:
    """The start is over: freeze every object alive and resume the collector that `pause`
    paused (a no-op otherwise)."""
    global _paused, _froze
    if _paused:
        _paused = False
        _froze = True
        gc.freeze()
        gc.enable()


def thaw() -> None:
    """Give what `started` froze back to the collector (a no-op unless it froze): before the
    interpreter's own exit, whose teardown does not finalize frozen objects (their `__del__`
    would not run)."""
    global _froze
    if _froze:
        _froze = False
        gc.unfreeze()


def _resume() -> None:
    global _paused
    if _paused:
        _paused = False
        gc.enable()


@contextmanager
def paused_until_ready() -> Iterator[Callable[[], None]]:
    """Keep the collector paused and yield `started`, to call once the start is over. Leaving
    the block resumes it too (a start that failed freezes nothing) and thaws what `started`
    froze. Only the main thread owns the process: in another one (a server run by another
    program) the collector is left alone."""
    owned = threading.current_thread() is threading.main_thread()
    if owned:
        pause()
    try:
        yield started
    finally:
        _resume()
        if owned:
            thaw()
