"""Binding and connecting Unix sockets whose path is longer than the kernel takes.

A Unix socket's address holds at most 107 bytes, and a Hermes home can be deeper than that
leaves room for (a profile under a long home folder, a test's temporary directory). On Linux
the socket's folder is opened and named through this process's `/proc/self/fd/N`, a short
path to the same place, so the socket still lives in the home, with the home's permissions.
Elsewhere, a long path fails as before (the caller says what it does without the socket)."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

MAX_PATH_BYTES = 107  # sun_path is 108 bytes with its terminating NUL


@contextlib.contextmanager
def reachable(path: Path) -> Iterator[str]:
    """A name for `path` short enough for bind/connect, valid inside the block."""
    if len(os.fsencode(path)) <= MAX_PATH_BYTES or not Path("/proc/self/fd").is_dir():
        yield str(path)
        return
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)


def bind(sock: socket.socket, path: Path) -> None:
    with reachable(path) as name:
        sock.bind(name)


def connect(sock: socket.socket, path: Path) -> None:
    with reachable(path) as name:
        sock.connect(name)
