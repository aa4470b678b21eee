"""Atomic replacement and cross-process locks for the files users may edit by hand (notes,
jobs.json, outputs)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from hermes.errors import HermesError

_thread_locks: dict[Path, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


class LockTimeoutError(HermesError, TimeoutError):
    """Another thread or process held the lock for longer than the caller would wait."""


def _thread_lock(path: Path) -> threading.Lock:
    with _thread_locks_guard:
        return _thread_locks.setdefault(path, threading.Lock())


@contextlib.contextmanager
def file_lock(lock_path: Path, *, wait: float | None = None) -> Iterator[None]:
    """Exclusive across threads (a lock per path) and processes (flock on `lock_path`).
    `wait` seconds at most (None: as long as it takes), then `LockTimeoutError`."""
    deadline = None if wait is None else time.monotonic() + wait
    tlock = _thread_lock(lock_path.absolute())
    if not tlock.acquire(timeout=-1 if wait is None else wait):
        raise LockTimeoutError(f"{lock_path} is held by another thread for over {wait:.0f}s")
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() > deadline:
                        raise LockTimeoutError(
                            f"{lock_path} is held by another Hermes process for over "
                            f"{wait:.0f}s; try again"
                        ) from None
                    time.sleep(0.01)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        tlock.release()


def atomic_write(path: Path, data: bytes | str, *, mode: int = 0o600) -> None:
    """Temp file in the same directory + fsync + rename + fsync of the directory:
    readers see the old file or the new one, never half of either, even after a crash."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
