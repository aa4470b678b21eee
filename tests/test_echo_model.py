"""The echo model users start by hand (`python -m hermes.testing.fake_model`) starts cleanly."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import httpx


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_echo_model_starts_without_a_warning_and_answers() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-W", "error", "-m", "hermes.testing.fake_model", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once serving, or EOF if it died of a warning
        if not first:
            proc.wait(timeout=10)
            raise AssertionError(f"the echo model exited: {proc.stderr and proc.stderr.read()}")
        assert first.startswith(f"echo model on http://127.0.0.1:{port}/v1")
        r = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={"model": "echo", "messages": [{"role": "user", "content": "hi"}]},
            timeout=10,
        )
        assert r.json()["choices"][0]["message"]["content"] == "(echo model) You said: hi"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "Warning" not in err, err


def test_the_package_still_exports_the_fake_model() -> None:
    from hermes.testing import FakeModel, Text
    from hermes.testing.fake_model import FakeModel as Direct

    assert FakeModel is Direct and Text.__name__ == "Text"
