"""A daemon thread a store starts on demand and stops at close (the group-commit writer, the
search index's catch-up): the start, the wake-up condition and the stop, written once."""

from __future__ import annotations

import threading


class DaemonThread:
    """Subclasses implement `_loop`, which returns once `_closed` is set (under `_wake`)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._wake = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._closed = False

    def _ensure_started(self) -> None:
        """Start the thread unless it runs (the caller holds `_wake`)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
            self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Let the thread finish what it must, then stop it."""
        with self._wake:
            self._closed = True
            thread, self._thread = self._thread, None
            self._wake.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _loop(self) -> None:
        raise NotImplementedError
