"""Walk README's quickstart and tutorial on the default install, as a new user would.

Run with the Python of a virtual environment made by README's first command alone (no
extras): `.ci/run` does. It starts the echo model and `hermes serve` in a fresh HERMES_HOME,
then drives the API with the openai SDK and httpx and the CLI as subprocesses: chat with the
session header, the jobs snippet twice, /health, sessions import/search/reindex/export,
memory show, cron list, doctor, chat -q. Any non-zero exit or traceback fails it, and so does
a search by meaning that does not find "my pet" in "I adopted a greyhound".

    .venv-default/bin/python scripts/smoke-default-install.py
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from openai import OpenAI

BIN = Path(sys.executable).parent
FAILURES: list[str] = []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check(ok: bool, what: str) -> None:
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def hermes(*args: str, env: dict[str, str], stdin: str | None = None) -> str:
    r = subprocess.run(
        [str(BIN / "hermes"), *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    clean = r.returncode == 0 and "Traceback" not in r.stdout + r.stderr
    check(clean, f"hermes {' '.join(args)} (exit {r.returncode})")
    if not clean:
        print(r.stdout[-2000:], r.stderr[-4000:], sep="\n", file=sys.stderr)
    return r.stdout


def wait_for(url: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not answer in {seconds:.0f} s")


def installed_without_pytorch() -> None:
    import importlib.util

    for heavy in ("torch", "sentence_transformers", "transformers"):
        check(importlib.util.find_spec(heavy) is None, f"the default install has no {heavy}")


def main() -> int:
    installed_without_pytorch()
    home = Path(tempfile.mkdtemp(prefix="hermes-smoke-"))
    model_port, port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))} | {
        "HERMES_HOME": str(home / "hermes"),
        "HOME": str(home),
        "OPENAI_BASE_URL": f"http://127.0.0.1:{model_port}/v1",
        "HERMES_MODEL": "echo",
        "HERMES_PORT": str(port),
    }
    model = subprocess.Popen(
        [
            sys.executable,
            "-W",
            "error",
            "-m",
            "hermes.testing.fake_model",
            "--port",
            str(model_port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = subprocess.Popen(
        [str(BIN / "hermes"), "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(f"http://127.0.0.1:{model_port}/v1/models")
        wait_for(f"http://127.0.0.1:{port}/health")
        tutorial(port)
        cli(env, home)
    finally:
        server.terminate()
        model.terminate()
        server_log, _ = server.communicate(timeout=30)
        _, model_err = model.communicate(timeout=30)
    check("Traceback" not in server_log, "hermes serve logged no traceback")
    check(server.returncode == 0, f"hermes serve stopped cleanly (exit {server.returncode})")
    check("Warning" not in model_err, "the echo model started without a warning")
    if "Traceback" in server_log:
        print(server_log[-6000:], file=sys.stderr)
    print(f"\n{len(FAILURES)} failed" if FAILURES else "\nthe default install walks the README")
    return 1 if FAILURES else 0


def tutorial(port: int) -> None:
    """SPEC §1 and README's quickstart, verbatim but for the port."""
    client = OpenAI(base_url=f"http://localhost:{port}/v1", api_key="hermes")

    def chat(message: str) -> str:
        r = client.chat.completions.create(
            model="hermes",
            messages=[{"role": "user", "content": message}],
            extra_headers={"X-Hermes-Session-Id": "my-first-agent"},
        )
        return r.choices[0].message.content or ""

    chat("My name is Alex and I'm building a todo app in Go.")
    answer = chat("What language am I using?")
    check(bool(answer), "the openai SDK chats with the session header")

    job = {
        "name": "daily-standup",
        "schedule": "0 9 * * 1-5",
        "prompt": "Summarise what I decided yesterday.",
    }
    url, auth = f"http://localhost:{port}/api/jobs", {"Authorization": "Bearer hermes"}
    first = httpx.post(url, headers=auth, json=job)
    again = httpx.post(url, headers=auth, json=job)
    check(first.status_code == 201, f"the job snippet creates the job ({first.status_code})")
    check(
        again.status_code == 200 and again.json()["job"]["id"] == first.json()["job"]["id"],
        f"the job snippet run again gives the same job ({again.status_code})",
    )
    health = httpx.get(f"http://localhost:{port}/health")
    check(health.json().get("status") == "ok", "curl /health says ok")


def cli(env: dict[str, str], home: Path) -> None:
    history = home / "history.jsonl"
    sessions = [
        {
            "id": "pets",
            "started_at": 1_700_000_000,
            "messages": [
                {"role": "user", "content": "I adopted a greyhound from the shelter last spring."},
                {"role": "assistant", "content": "Lovely! What is the dog called?"},
            ],
        },
        {
            "id": "work",
            "started_at": 1_700_100_000,
            "messages": [
                {"role": "user", "content": "The quarterly report is due on Friday."},
                {"role": "assistant", "content": "I will remind you on Thursday."},
            ],
        },
    ]
    history.write_text("".join(json.dumps(s) + "\n" for s in sessions))
    hermes("sessions", "import", str(history), env=env)
    hermes("sessions", "reindex", env=env)
    found = hermes("sessions", "search", "my pet", "--json", env=env)
    hits = json.loads(found)["hits"] if found else []
    check(
        bool(hits) and hits[0]["session_id"] == "pets",
        "a search by meaning finds 'my pet' in 'I adopted a greyhound' first",
    )
    hermes("sessions", "search", "todo", env=env)
    hermes("sessions", "list", env=env)
    hermes("sessions", "export", str(home / "export.jsonl"), env=env)
    hermes("memory", "show", env=env)
    listed = hermes("cron", "list", env=env)
    check("daily-standup" in listed, "hermes cron list shows the tutorial's job")
    hermes("doctor", env=env)
    said = hermes("chat", "-q", "hi", env=env)
    check("hi" in said, "hermes chat -q answers")
    hermes("--version", env=env)
    words_only = env | {"HERMES_EMBEDDINGS": "off"}
    hermes("sessions", "search", "greyhound", env=words_only)


if __name__ == "__main__":
    sys.exit(main())
