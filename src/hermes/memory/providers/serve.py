"""The child side of a provider run in its own process (`remote.ProcessBackend`): read one
JSON request per line on stdin, answer one JSON line on stdout, until `close` or end of input.

The protocol is tiny on purpose: `{"id", "op", "args"}` in, `{"id", "result"}` or
`{"id", "error", "dropped"?}` out, and a first line `{"ready": "..."}` or `{"failed": "..."}`
once the backend is open. Anything a library prints goes to stderr: the real stdout is kept
for the protocol alone, so a stray print can never corrupt an answer.

A backend whose store admits one process (Mem0's) names a socket (`share_at`): while it runs,
other Hermes processes of the home (`hermes memory status`, `hermes users forget` beside a
running server) speak the same protocol there instead of failing on the store's lock. Calls
from either side run one at a time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from hermes.config.settings import Settings, load_settings
from hermes.memory.providers import unix_socket
from hermes.memory.providers.backend import Backend, ProviderError, Said, StoreHeld

OPS = ("check", "recall", "store", "search", "forget", "note")
log = logging.getLogger(__name__)


def _protocol_stdout() -> IO[str]:
    """The real stdout for answers; fd 1 (and `print`) now write to stderr instead."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


def _send(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def _call(backend: Backend, op: str, args: list[Any]) -> Any:
    if op == "store":
        user, session, turn = args
        return backend.store(user, session, [Said(r, c) for r, c in turn])
    if op not in OPS:
        raise ProviderError(f"unknown operation {op!r}")
    return getattr(backend, op)(*args)


class _Answerer:
    """Runs requests on the backend one at a time, whichever side they come from."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            try:
                result = _call(self.backend, str(request["op"]), list(request.get("args", [])))
            except Exception as exc:
                error = (
                    str(exc) if isinstance(exc, ProviderError) else f"{type(exc).__name__}: {exc}"
                )
                return {"id": request["id"], "error": error}
        return {"id": request["id"], "result": result}

    def close(self) -> None:
        with self._lock:  # after a visitor's call in flight
            self.backend.close()


def _answer_lines(lines: IO[str], out: IO[str], answer: _Answerer) -> None:
    """One connection: a request per line until `close` or the end of its input."""
    for line in lines:
        request = json.loads(line)
        if request.get("op") == "close":
            break
        _send(out, answer(request))


@contextlib.contextmanager
def _shared(path: Path | None, answer: _Answerer) -> Iterator[None]:
    """Answer other processes at the socket `path` (0600, in the home) while the block runs."""
    if path is None:
        yield
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        path.unlink(missing_ok=True)  # a stale one: this process holds the store now
        unix_socket.bind(listener, path)
        os.chmod(path, 0o600)
        listener.listen()
    except OSError as exc:  # not shared (a long path off Linux, a read-only home)
        log.warning("not answering other processes at %s: %s", path, exc)
        listener.close()
        yield
        return
    threading.Thread(target=_accept, args=(listener, answer), daemon=True).start()
    try:
        yield
    finally:
        listener.close()
        path.unlink(missing_ok=True)


def _accept(listener: socket.socket, answer: _Answerer) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:  # closed: the worker is stopping
            return
        threading.Thread(target=_visitor, args=(conn, answer), daemon=True).start()


def _visitor(conn: socket.socket, answer: _Answerer) -> None:
    with conn, conn.makefile("r", encoding="utf-8") as lines:
        out = conn.makefile("w", encoding="utf-8")
        try:
            _send(out, {"ready": os.getpid()})
            _answer_lines(lines, out, answer)
        except (OSError, ValueError):
            pass  # the other process went away
        finally:
            with contextlib.suppress(OSError):
                out.close()


def serve(make_backend: Callable[[Settings], Backend], argv: list[str]) -> int:
    """Open the backend for the Hermes home `argv[0]`, then answer requests; the exit code."""
    out = _protocol_stdout()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    try:
        backend = make_backend(load_settings(Path(argv[0])))
    except StoreHeld as exc:  # the client uses the holder's worker instead
        _send(out, {"failed": str(exc), "held": str(exc.at)})
        return 1
    except ProviderError as exc:
        _send(out, {"failed": str(exc)})
        return 1
    except Exception as exc:  # the library's own failure, said in one line
        _send(out, {"failed": f"{type(exc).__name__}: {exc}"})
        return 1
    answer = _Answerer(backend)
    _send(out, {"ready": os.getpid()})
    try:
        with _shared(getattr(backend, "share_at", None), answer):
            _answer_lines(sys.stdin, out, answer)
    finally:
        answer.close()
    return 0
