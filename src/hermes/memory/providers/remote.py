"""A provider whose engine runs in a child process (`python -m <module> HERMES_HOME`, the
protocol of `serve.py`), seen by the server as an ordinary `Backend`.

Why: an engine that runs in-process (Mem0: a local vector store, embeddings, extraction
calls) competes with turns for the interpreter and its lock, which shows in the turns' p99.
In a child process it only costs the server a small message per call.

The provider's worker thread makes one call at a time, so the client is synchronous: write a
line, wait for its answer. What can go wrong, and what happens:
- the child cannot start (missing library, bad setting): `ProviderError` with its sentence;
- the child dies, or stops answering within `call_timeout`: it is killed, the call in flight
  is dropped (`CallDropped`: counted and logged by the worker), and the next call starts a
  new child, at once after a first crash, then after a back-off that doubles (to a minute)
  while crashes repeat; calls during the back-off are dropped too, never left to wait;
- a clean stop: `close` asks the child to close its store and waits for it to exit;
- the child finds the store held by another process's worker (a CLI command beside a running
  server): the calls go to that worker's socket instead (`serve.py`), same protocol.
"""

from __future__ import annotations

import json
import logging
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from hermes.memory.providers import unix_socket
from hermes.memory.providers.backend import CallDropped, ProviderError, Said

log = logging.getLogger(__name__)

START_TIMEOUT_S = 180.0  # importing the library and loading an embedding model, on a busy box
STOP_TIMEOUT_S = 10.0
MAX_BACKOFF_S = 60.0
STDERR_CHARS = 500
_EOF = object()


@dataclass
class _Peer:
    """The worker of the process that holds the store, reached at its socket."""

    sock: socket.socket
    writer: IO[str]
    pid: int

    def close(self) -> None:
        for part in (self.writer, self.sock):
            try:
                part.close()
            except OSError:
                pass  # already gone


class ProcessBackend:
    """One child process running `module`'s engine for the Hermes home `home`."""

    def __init__(
        self,
        name: str,
        module: str,
        home: Path,
        *,
        call_timeout: float,
        scrub: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.name = name
        self.module = module
        self.home = home
        self.call_timeout = call_timeout
        self.scrub = scrub
        self.restarts = 0
        self.crashes = 0
        self._proc: subprocess.Popen[str] | None = None
        self._peer: _Peer | None = None
        self._answers: queue.Queue[Any] = queue.Queue()
        self._next_id = 0
        self._backoff = 0.0
        self._retry_at = 0.0
        self._start()

    # -- the Backend contract --------------------------------------------------------------

    def check(self) -> str:
        return str(self._call("check"))

    def recall(self, user: str, query: str) -> str:
        text = self._call("recall", user, query)
        if not isinstance(text, str):
            raise ProviderError(f"{self.name} recall returned {type(text).__name__}, not text")
        return text

    def store(self, user: str, session: str, turn: Sequence[Said]) -> None:
        self._call("store", user, session, [[s.role, s.content] for s in turn])

    def search(self, user: str, query: str, limit: int) -> list[str]:
        found = self._call("search", user, query, limit)
        if not isinstance(found, list):
            raise ProviderError(f"{self.name} search returned {type(found).__name__}")
        return [str(item) for item in found]

    def forget(self, user: str) -> int:
        return int(self._call("forget", user))

    def note(self, user: str, target: str, action: str, entry: str) -> None:
        self._call("note", user, target, action, entry)

    def close(self) -> None:
        peer, self._peer = self._peer, None
        if peer is not None:
            peer.close()  # the holder's worker goes on
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"op": "close"}) + "\n")
            proc.stdin.close()
            proc.wait(STOP_TIMEOUT_S)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            log.warning("memory provider %s: its process did not stop; killed", self.name)
            proc.kill()
            proc.wait()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    # -- the child -------------------------------------------------------------------------

    def _start(self) -> None:
        command = [sys.executable, "-m", self.module, str(self.home)]
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        answers: queue.Queue[Any] = queue.Queue()
        assert proc.stdout is not None and proc.stderr is not None
        threading.Thread(
            target=_read_lines, args=(proc.stdout, answers), name=f"{self.name}-out", daemon=True
        ).start()
        tail: list[str] = []
        threading.Thread(
            target=self._log_stderr, args=(proc.stderr, tail), name=f"{self.name}-err", daemon=True
        ).start()
        try:
            first = answers.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            first = None
        if isinstance(first, dict) and "ready" in first:
            self._proc, self._answers = proc, answers
            return
        _kill(proc)
        if isinstance(first, dict) and first.get("held"):
            self._join(Path(str(first["held"])), self.scrub(str(first["failed"])))
            return
        if isinstance(first, dict) and "failed" in first:
            raise ProviderError(self.scrub(str(first["failed"])))
        why = "did not start in time" if first is None else f"exited with code {proc.returncode}"
        last = self.scrub(" ".join(tail)[-STDERR_CHARS:])
        raise ProviderError(
            f"{self.name}'s worker process ({self.module}) {why}" + (f": {last}" if last else "")
        )

    def _join(self, at: Path, why: str) -> None:
        """Use the worker that holds the store, at its socket `at`."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        answers: queue.Queue[Any] = queue.Queue()
        try:
            sock.settimeout(STOP_TIMEOUT_S)
            unix_socket.connect(sock, at)
            sock.settimeout(None)
            reader = sock.makefile("r", encoding="utf-8")
            threading.Thread(
                target=_read_lines, args=(reader, answers), name=f"{self.name}-peer", daemon=True
            ).start()
            first = answers.get(timeout=STOP_TIMEOUT_S)
        except (OSError, queue.Empty) as exc:
            sock.close()
            raise ProviderError(f"{why}, and its worker does not answer at {at}: {exc}") from None
        if not isinstance(first, dict) or "ready" not in first:
            sock.close()
            raise ProviderError(f"{why}, and its worker at {at} closed the connection")
        writer = sock.makefile("w", encoding="utf-8")
        self._peer, self._answers = _Peer(sock, writer, int(first["ready"])), answers
        log.info(
            "memory provider %s: using the worker of pid %s (%s)", self.name, first["ready"], why
        )

    def _log_stderr(self, stream: IO[str], tail: list[str]) -> None:
        with stream:
            for line in stream:
                text = self.scrub(line.rstrip())
                if text:
                    tail.append(text)
                    del tail[:-5]
                    log.info("memory provider %s (worker): %s", self.name, text)

    def _ensure_running(self) -> None:
        if self._peer is not None or (self._proc is not None and self._proc.poll() is None):
            return
        if self._proc is not None:
            self._crashed(f"its process exited with code {self._proc.returncode}")
        wait = self._retry_at - time.monotonic()
        if wait > 0:
            raise CallDropped(f"{self.name}'s worker process restarts in {wait:.0f}s")
        try:
            self._start()
        except ProviderError:
            self._grow_backoff()
            self._retry_at = time.monotonic() + self._backoff
            raise
        self.restarts += 1
        log.warning("memory provider %s: worker process restarted (pid %s)", self.name, self.pid)

    def _call(self, op: str, *args: Any) -> Any:
        self._ensure_running()
        writer = self._peer.writer if self._peer is not None else self._stdin()
        self._next_id += 1
        request_id = self._next_id
        try:
            writer.write(json.dumps({"id": request_id, "op": op, "args": list(args)}) + "\n")
            writer.flush()
        except (OSError, ValueError):
            self._crashed("its process closed its input")
            raise CallDropped(f"{self.name}'s worker process died; {op} not carried out") from None
        deadline = time.monotonic() + self.call_timeout
        while True:
            try:
                answer = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._crashed(f"{op} got no answer in {self.call_timeout:g}s")
                raise CallDropped(
                    f"{self.name}'s worker process did not answer {op} in "
                    f"{self.call_timeout:g}s; restarted"
                ) from None
            if answer is _EOF:
                self._crashed(f"its process died during {op}")
                raise CallDropped(f"{self.name}'s worker process died during {op}")
            if isinstance(answer, dict) and answer.get("id") == request_id:
                break
        self._backoff = 0.0  # healthy again
        if "error" in answer:
            raise ProviderError(self.scrub(str(answer["error"])))
        return answer.get("result")

    def _stdin(self) -> IO[str]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        return proc.stdin

    def _crashed(self, why: str) -> None:
        peer, self._peer = self._peer, None
        if peer is not None:
            peer.close()
        proc, self._proc = self._proc, None
        if proc is not None:
            _kill(proc)
        self.crashes += 1
        self._retry_at = time.monotonic() + self._backoff
        self._grow_backoff()
        log.warning(
            "memory provider %s: worker process lost (%s); next start in %.0fs",
            self.name,
            why,
            max(0.0, self._retry_at - time.monotonic()),
        )

    def _grow_backoff(self) -> float:
        """The back-off to wait now; the next one doubles (a first crash restarts at once)."""
        current = self._backoff
        self._backoff = min(MAX_BACKOFF_S, max(1.0, self._backoff * 2))
        return current


def _read_lines(stream: IO[str], answers: queue.Queue[Any]) -> None:
    with stream:
        for line in stream:
            try:
                answers.put(json.loads(line))
            except json.JSONDecodeError:
                log.warning("memory provider worker wrote a line that is not JSON: %.200s", line)
    answers.put(_EOF)


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass  # the pipe was already broken
    try:
        proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        log.warning("a memory provider worker process (pid %s) does not exit", proc.pid)
