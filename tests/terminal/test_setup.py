"""`hermes setup` finds local model servers (stand-ins for Ollama and LM Studio on loopback),
moves Hermes off the port Ollama holds, and checks remote keys."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hermes.cli.probe import ProbeConfigError, probe_ports
from hermes.testing.fake_model import FakeModel, Text
from tests.conftest import run_cli
from tests.terminal.standins import closed_port, ollama


def _ports(monkeypatch: pytest.MonkeyPatch, **ports: int) -> None:
    spec = {"ollama": closed_port(), "lmstudio": closed_port(), "llamacpp": closed_port()}
    spec["vllm"] = closed_port()
    spec.update(ports)
    monkeypatch.setenv("HERMES_SETUP_PORTS", ",".join(f"{k}={v}" for k, v in spec.items()))


def test_setup_finds_local_servers_and_moves_off_ollamas_port(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ollama(["llama3.2:3b"]) as ollama_port, FakeModel(model_name="qwen2.5-7b") as lms:
        _ports(monkeypatch, ollama=ollama_port, lmstudio=lms.port)
        home.mkdir(parents=True, exist_ok=True)
        # Hermes' port is where Ollama listens (11434 is both defaults)
        (home / "config.yaml").write_text(f"server:\n  port: {ollama_port}\n")
        result = run_cli("setup", input="2\nn\n")
        assert result.returncode == 0, result.stdout + result.stderr
        out = result.stdout
        assert "1) llama3.2:3b  (Ollama" in out and "2) qwen2.5-7b  (LM Studio" in out
        assert "not running here: llama.cpp server" in out
        config = yaml.safe_load((home / "config.yaml").read_text())
        assert config["model"] == {
            "base_url": f"http://127.0.0.1:{lms.port}/v1",
            "name": "qwen2.5-7b",
        }
        new_port = config["server"]["port"]
        assert new_port != ollama_port
        assert f"Ollama is listening on port {ollama_port}" in out and f"port {new_port}" in out
        assert "Ready" in out
        lms.enqueue(Text("set up and talking"))
        assert run_cli("chat", "-q", "hi").stdout == "set up and talking\n"


def test_setup_picks_an_ollama_model_and_says_when_a_server_has_none(
    home: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeModel
) -> None:
    with ollama(["llama3.2:3b", "qwen3:8b"]) as port:
        _ports(monkeypatch, ollama=port)
        result = run_cli("setup", input="2\nn\n")
        assert result.returncode == 0, result.stderr
        config = yaml.safe_load((home / "config.yaml").read_text())
        assert config["model"] == {"base_url": f"http://127.0.0.1:{port}/v1", "name": "qwen3:8b"}
        assert "server" not in config  # nothing held Hermes' port
    with ollama([]) as port:
        _ports(monkeypatch, ollama=port)
        result = run_cli("setup", input=f"\n{fake.base_url}\n\n\nn\n")  # nothing to pick: remote
        assert result.returncode == 0, result.stderr
        assert f"Ollama on port {port} has no models" in result.stdout
        assert "ollama pull" in result.stdout


def test_setup_remote_endpoint_checks_the_key(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _ports(monkeypatch)
    with FakeModel(api_key="sk-right-key") as remote:
        result = run_cli("setup", input=f"\n{remote.base_url}\nsk-wrong\nsk-right-key\n\ny\n")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "refused that key" in result.stdout and "The key works" in result.stdout
        assert "sk-wrong" not in result.stdout and "sk-right-key" not in result.stdout
        env = (home / ".env").read_text()
        assert "OPENAI_API_KEY=sk-right-key" in env and "HERMES_API_KEY=" in env
        assert yaml.safe_load((home / "config.yaml").read_text())["model"]["name"] == "fake-model"
        remote.enqueue(Text("remote ok"))
        assert run_cli("chat", "-q", "hi").stdout == "remote ok\n"
        # scripted: every answer as an option, a bad key fails with a sentence
        bad = run_cli(
            "setup",
            "--base-url",
            remote.base_url,
            "--model",
            "m",
            "--api-key",
            "nope",
            "--no-server-key",
        )
        assert bad.returncode == 1 and "no working key" in bad.stderr


def test_probe_ports_are_configurable_and_checked() -> None:
    ports = dict((kind.key, port) for kind, port in probe_ports("ollama=5000, vllm=5001"))
    assert ports == {"ollama": 5000, "lmstudio": 1234, "llamacpp": 8080, "vllm": 5001}
    with pytest.raises(ProbeConfigError, match="ollama=x"):
        probe_ports("ollama=x")
