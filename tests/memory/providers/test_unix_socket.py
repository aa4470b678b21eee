"""A provider worker's socket works at a path longer than a Unix socket address holds."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from hermes.memory.providers import unix_socket


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc")
def test_a_socket_deeper_than_107_bytes_binds_and_answers(tmp_path: Path) -> None:
    folder = tmp_path / ("a-long-folder-name-" * 8)
    folder.mkdir()
    path = folder / "worker.sock"
    assert len(str(path)) > 108
    with socket.socket(socket.AF_UNIX) as plain, pytest.raises(OSError):
        plain.bind(str(path))  # what a plain bind says to it

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_socket.bind(listener, path)
    listener.listen()
    assert path.exists()  # in its folder, not elsewhere

    def echo() -> None:
        conn, _ = listener.accept()
        conn.sendall(conn.recv(100).upper())
        conn.close()

    thread = threading.Thread(target=echo)
    thread.start()
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    unix_socket.connect(client, path)
    client.sendall(b"hello")
    assert client.recv(100) == b"HELLO"
    client.close()
    thread.join(10)
    listener.close()


def test_a_short_path_is_used_as_it_is(tmp_path: Path) -> None:
    with unix_socket.reachable(tmp_path / "s.sock") as name:
        assert name == str(tmp_path / "s.sock") or len(str(tmp_path)) > 100
