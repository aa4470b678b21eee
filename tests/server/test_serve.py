"""`hermes serve` as a real process: the tutorial with the openai SDK, bind rules, graceful stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from hermes.store.sqlite import SQLiteStore
from hermes.testing.fake_model import FakeModel, Hang, Text

from ..conftest import run_cli


@contextmanager
def hermes_serve(
    *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`hermes serve --port 0 …` as a subprocess; yields it and its base URL once it is ready.
    A thread reads its stderr to the end (`served_stderr`): a line is never left unseen in a
    buffer, and a chatty server never blocks on a full pipe."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    output = _Output(proc)
    try:
        yield proc, output.wait_for_url()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        output.finish()


_OUTPUTS: dict[int, _Output] = {}


def served_stderr(proc: subprocess.Popen[str]) -> str:
    """Everything the process wrote to stderr (once it has exited)."""
    output = _OUTPUTS[proc.pid]
    output.reader.join(10)
    return "".join(output.lines)


class _Output:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        self.stream = proc.stderr
        self.lines: list[str] = []
        self.arrived = threading.Condition()
        self.ended = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        _OUTPUTS[proc.pid] = self

    def _read(self) -> None:
        for line in self.stream:
            with self.arrived:
                self.lines.append(line)
                self.arrived.notify_all()
        with self.arrived:
            self.ended = True
            self.arrived.notify_all()

    def wait_for_url(self, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for line in self.lines:
                    if "listening on " in line:
                        return line.split("listening on ", 1)[1].split()[0]
                if self.ended:
                    raise AssertionError(f"hermes serve exited early: {''.join(self.lines)}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"hermes serve did not start: {''.join(self.lines)}")
                self.arrived.wait(left)

    def finish(self) -> None:
        self.reader.join(10)  # the process has exited: to the end of its output
        self.stream.close()
        _OUTPUTS.pop(next(k for k, v in _OUTPUTS.items() if v is self), None)


def _answer(body: dict) -> Text:
    return Text(f"ack {len(body['messages'])}")


@pytest.mark.usefixtures("model_env")
def test_tutorial_with_the_openai_sdk(fake: FakeModel) -> None:
    """SPEC §1 verbatim (only the port differs: the test server listens on a free one)."""
    fake.default = _answer
    with hermes_serve() as (_, base):
        from openai import OpenAI

        client = OpenAI(base_url=f"{base}/v1", api_key="hermes")

        def chat(message):
            r = client.chat.completions.create(
                model="hermes",
                messages=[{"role": "user", "content": message}],
                extra_headers={"X-Hermes-Session-Id": "my-first-agent"},
            )
            return r.choices[0].message.content

        chat("My name is Alex and I'm building a todo app in Go.")
        chat("What language am I using?")  # the model sees the first message: the server kept it
        chat("Decision: todos are stored in SQLite.")
        chat("Decision: the API speaks JSON over HTTP.")
        chat("Decision: every write is retried three times.")
        answer = chat("What have we decided that affects reliability?")
        assert answer.startswith("ack ")

        r = httpx.post(
            f"{base}/api/jobs",
            headers={"Authorization": "Bearer hermes"},
            json={"name": "daily-standup", "schedule": "0 9 * * 1-5", "prompt": "..."},
        )
        assert r.status_code == 201 and r.json()["job"]["name"] == "daily-standup"
        assert httpx.get(f"{base}/health").json()["status"] == "ok"

        other = client.chat.completions.create(
            model="hermes",
            messages=[{"role": "user", "content": "What have we decided?"}],
            extra_headers={"X-Hermes-Session-Id": "another-agent"},
        )
        assert other.choices[0].message.content

    calls = [b for b in fake.chat_requests() if b["messages"][-1]["role"] == "user"]
    sent = [[m["content"] for m in b["messages"] if m["role"] != "system"] for b in calls]
    assert sent[1] == [
        "My name is Alex and I'm building a todo app in Go.",
        "ack 2",
        "What language am I using?",
    ]
    fifth = "\n".join(sent[4])
    assert fifth.count("Decision: ") == 3
    for decision in ("SQLite", "JSON over HTTP", "retried three times"):
        assert decision in fifth
        assert decision in "\n".join(sent[5])
        assert decision not in "\n".join(sent[6])
    assert sent[6] == ["What have we decided?"]


@pytest.mark.usefixtures("model_env")
def test_sigterm_lets_the_in_flight_turn_finish_and_be_stored(fake: FakeModel, home: Path) -> None:
    fake.enqueue(Hang(0.5, then=Text("finished despite shutdown")))
    with hermes_serve() as (proc, base):
        result: dict[str, httpx.Response] = {}

        def call() -> None:
            result["r"] = httpx.post(
                f"{base}/v1/chat/completions",
                timeout=10,
                headers={"X-Hermes-Session-Id": "inflight"},
                json={"model": "hermes", "messages": [{"role": "user", "content": "go"}]},
            )

        thread = threading.Thread(target=call)
        thread.start()
        fake.wait_for_requests(1)
        proc.send_signal(signal.SIGTERM)
        thread.join(10)
        assert proc.wait(10) == 0
    assert result["r"].status_code == 200
    assert result["r"].json()["choices"][0]["message"]["content"] == "finished despite shutdown"
    store = SQLiteStore(home / "state.db")
    try:
        assert [m.content for m in store.get_messages("default", "inflight")] == [
            "go",
            "finished despite shutdown",
        ]
    finally:
        store.close()


@pytest.mark.usefixtures("model_env")
def test_sigint_stops_cleanly(fake: FakeModel) -> None:
    with hermes_serve() as (proc, base):
        assert httpx.get(f"{base}/health").status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        assert "Traceback" not in served_stderr(proc)


@pytest.mark.parametrize(
    "host, key, fragment",
    [
        ("0.0.0.0", None, "no server key is set"),
        ("0.0.0.0", "short-key", "has only 9 characters"),
        ("::", "", "no server key is set"),
        ("example.com", None, "reachable from other machines"),
    ],
)
def test_public_bind_needs_a_strong_key(
    monkeypatch: pytest.MonkeyPatch, host: str, key: str | None, fragment: str
) -> None:
    if key is not None:
        monkeypatch.setenv("HERMES_API_KEY", key)
    r = run_cli("serve", "--host", host, "--port", "0")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "HERMES_API_KEY" in lines[0]


@pytest.mark.usefixtures("model_env")
def test_public_bind_with_a_strong_key_starts_and_requires_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HERMES_API_KEY", "k" * 16)
    with hermes_serve("--host", "0.0.0.0") as (_, base):
        port = base.rsplit(":", 1)[1]
        url = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{url}/v1/models").status_code == 401
        assert (
            httpx.get(
                f"{url}/v1/models", headers={"Authorization": f"Bearer {'k' * 16}"}
            ).status_code
            == 200
        )


def test_busy_port_is_one_clear_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run_cli("serve", "--port", str(port))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "--port" in lines[0]


def test_unreadable_state_database_is_one_clear_line(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "state.db").write_bytes(b"this is not a database" * 100)
    r = run_cli("serve", "--port", "0")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("hermes: ") and "state.db" in lines[-1]
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------------- no model, self-reference


def test_serve_without_a_model_says_so_in_one_line() -> None:
    """Issue 33: a server with no model used to start silently; chats then got 503s."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        while not any("listening on " in line for line in seen):
            line = proc.stderr.readline()
            assert line, f"hermes serve exited early: {''.join(seen)}"
            seen.append(line)
        base = seen[-1].split("listening on ", 1)[1].split()[0]
        body = httpx.get(f"{base}/health").json()
        assert body["status"] == "ok" and body["model_configured"] is False
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        proc.stderr.close()
    about_model = [line for line in seen if "model" in line]
    assert len(about_model) == 1, seen
    line = about_model[0]
    assert "no model is set" in line and "hermes setup" in line
    assert "python -m hermes.testing.fake_model --port 8000 &" in line
    assert "OPENAI_BASE_URL=http://127.0.0.1:8000/v1 HERMES_MODEL=echo" in line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "bind, model_host",
    [
        ("127.0.0.1", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "127.0.0.1"),
        ("::1", "[::1]"),
        ("127.0.0.1", "0.0.0.0"),
    ],
)
def test_serve_refuses_a_model_endpoint_that_is_itself(
    monkeypatch: pytest.MonkeyPatch, bind: str, model_host: str
) -> None:
    port = _free_port()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://{model_host}:{port}/v1")
    monkeypatch.setenv("HERMES_MODEL", "hermes")
    r = run_cli("serve", "--host", bind, "--port", str(port))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "this Hermes server itself" in lines[0], lines
    assert "Traceback" not in r.stderr


def test_which_model_endpoints_are_this_server() -> None:
    from hermes.server.serve import model_points_here

    here = [
        ("http://localhost:11434/v1", "127.0.0.1", 11434),
        ("http://127.0.0.1:11434/v1", "localhost", 11434),
        ("http://[::1]:11434/v1", "127.0.0.1", 11434),
        ("http://127.0.0.2:11434/v1", "0.0.0.0", 11434),
        ("http://0.0.0.0:11434", "::", 11434),
        ("http://10.1.2.3:8080/v1", "10.1.2.3", 8080),
        ("http://localhost/v1", "127.0.0.1", 80),
    ]
    elsewhere = [
        ("http://localhost:11435/v1", "127.0.0.1", 11434),  # another port: Ollama moved
        ("http://10.1.2.3:11434/v1", "127.0.0.1", 11434),  # another machine
        ("https://api.openai.com/v1", "0.0.0.0", 443),
        ("http://localhost:11434/v1", "10.1.2.3", 11434),  # Hermes is not on loopback
        ("not a url", "127.0.0.1", 11434),
    ]
    assert [model_points_here(*case) for case in here] == [True] * len(here)
    assert [model_points_here(*case) for case in elsewhere] == [False] * len(elsewhere)
