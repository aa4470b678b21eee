"""The child side of a provider run in its own process (`remote.ProcessBackend`): read one
JSON request per line on stdin, answer one JSON line on stdout, until `close` or end of input.

The protocol is tiny on purpose: `{"id", "op", "args"}` in, `{"id", "result"}` or
`{"id", "error", "dropped"?}` out, and a first line `{"ready": "..."}` or `{"failed": "..."}`
once the backend is open. Anything a library prints goes to stderr: the real stdout is kept
for the protocol alone, so a stray print can never corrupt an answer.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from hermes.config.settings import Settings, load_settings
from hermes.memory.providers.backend import Backend, ProviderError, Said

OPS = ("check", "recall", "store", "search", "forget", "note")


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


def serve(make_backend: Callable[[Settings], Backend], argv: list[str]) -> int:
    """Open the backend for the Hermes home `argv[0]`, then answer requests; the exit code."""
    out = _protocol_stdout()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    try:
        backend = make_backend(load_settings(Path(argv[0])))
    except ProviderError as exc:
        _send(out, {"failed": str(exc)})
        return 1
    except Exception as exc:  # the library's own failure, said in one line
        _send(out, {"failed": f"{type(exc).__name__}: {exc}"})
        return 1
    _send(out, {"ready": os.getpid()})
    try:
        for line in sys.stdin:
            request = json.loads(line)
            if request.get("op") == "close":
                break
            try:
                result = _call(backend, str(request["op"]), list(request.get("args", [])))
            except Exception as exc:
                error = (
                    str(exc) if isinstance(exc, ProviderError) else f"{type(exc).__name__}: {exc}"
                )
                _send(out, {"id": request["id"], "error": error})
                continue
            _send(out, {"id": request["id"], "result": result})
    finally:
        backend.close()
    return 0
