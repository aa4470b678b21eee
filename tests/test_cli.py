import json
import time
from pathlib import Path

from hermes.testing.fake_model import FakeModel, Text
from tests.conftest import run_cli, run_cli_subprocess


def test_version() -> None:
    result = run_cli_subprocess("--version")  # smoke: the installed entry point starts
    assert result.returncode == 0 and result.stdout.startswith("hermes ")


def test_a_store_command_starts_without_loading_the_agent(tmp_path: Path) -> None:
    """`hermes sessions import` runs once per file of a bulk import: it must not pay the
    second that loading the agent, the model client and every part takes. A part's own
    command still loads them when it is asked for."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from hermes.cli.main import app\n"
        "try:\n"
        "    app(sys.argv[1:], prog_name='hermes')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('hermes.agent.loop', 'hermes.models.client', 'aiohttp', 'hermes.gateway.part')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60
    )
    listed = run("sessions", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip().splitlines()[-1] == "[]"
    db = run("db", "status")
    assert "hermes.gateway.part" in db.stdout.strip().splitlines()[-1]  # parts load on demand


STORE_COMMANDS = (
    ("sessions", "list"),
    ("memory", "show"),
    ("usage",),
    ("keys", "list"),
    ("users", "list"),
    ("cron", "list"),
)


def test_store_commands_load_neither_the_registry_nor_unused_settings_parts() -> None:
    """The store-only commands (issue #44: ≤ 0.3 s each) open settings and the store, and no
    more: not the plugin registry, not the server, not the YAML or .env readers of a home that
    has neither file, and of pydantic's models only `Settings` is built (its sections inside
    it, not each on its own)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from hermes.cli.main import app\n"
        "try:\n"
        "    app(sys.argv[1:], prog_name='hermes')\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "from pydantic import BaseModel\n"
        "def models(cls):\n"
        "    for sub in cls.__subclasses__():\n"
        "        yield sub\n"
        "        yield from models(sub)\n"
        "built = sorted({m.__name__ for m in models(BaseModel)\n"
        "                if m.__module__.startswith('hermes.config')\n"
        "                and m.__dict__.get('__pydantic_complete__')})\n"
        "heavy = ('hermes.plugins', 'hermes.agent.loop', 'fastapi', 'yaml', 'dotenv')\n"
        "print(sorted(m for m in heavy if m in sys.modules), built)\n"
    )
    for command in STORE_COMMANDS:
        run = subprocess.run(
            [sys.executable, "-c", probe, *command], capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, (command, run.stderr)
        assert run.stdout.strip().splitlines()[-1] == "[] ['Settings']", command


def test_one_shot_prints_only_the_answer(model_env: dict, fake: FakeModel) -> None:
    fake.enqueue(Text("Hello from the model"))
    result = run_cli_subprocess("chat", "-q", "hi")  # smoke: a real process, real stdout
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello from the model\n"
    assert fake.chat_requests()[0]["messages"][-1] == {"role": "user", "content": "hi"}


def test_named_session_is_continued(model_env: dict, fake: FakeModel) -> None:
    fake.enqueue(Text("Nice to meet you, Alex"), Text("Go"))
    assert run_cli("chat", "-q", "I'm Alex and I use Go", "--session", "s1").returncode == 0
    assert run_cli("chat", "-q", "What language?", "--session", "s1").stdout == "Go\n"
    second = [m["content"] for m in fake.chat_requests()[1]["messages"][1:]]
    assert second == ["I'm Alex and I use Go", "Nice to meet you, Alex", "What language?"]


def test_unconfigured_model_says_how_to_fix() -> None:
    result = run_cli("chat", "-q", "hi")
    assert result.returncode == 2
    assert "OPENAI_BASE_URL" in result.stderr and "Traceback" not in result.stderr


def test_bad_session_name_is_refused() -> None:
    result = run_cli("chat", "-q", "hi", "--session", "bad name!")
    assert result.returncode == 2 and "session name" in result.stderr


def test_doctor_explains_missing_and_unreachable_endpoint(monkeypatch) -> None:
    result = run_cli("doctor")
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if "model endpoint" in line]
    assert len(lines) == 1 and "OPENAI_BASE_URL" in lines[0]
    assert "ok   store" in result.stdout
    with FakeModel() as dead:
        url = dead.base_url
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    result = run_cli("doctor")
    lines = [line for line in result.stdout.splitlines() if "model endpoint" in line]
    assert (
        result.returncode == 1 and len(lines) == 1 and "not usable" in lines[0] and url in lines[0]
    )
    assert "could not be reached (2 attempts)" in lines[0]  # a check retries once, no long back-off


def test_doctor_passes_with_a_live_endpoint(model_env: dict) -> None:
    result = run_cli("doctor")
    assert result.returncode == 0, result.stdout
    assert "answers" in result.stdout


def test_export_import_round_trip(tmp_path: Path, model_env: dict, fake: FakeModel) -> None:
    fake.enqueue(Text("first answer"), Text("second answer"))
    run_cli("chat", "-q", "question one", "--session", "a")
    run_cli("chat", "-q", "question two", "--session", "b")
    dump = tmp_path / "dump.jsonl"
    assert run_cli("sessions", "export", str(dump)).returncode == 0
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert [s["id"] for s in lines] == ["a", "b"]
    assert [m["content"] for m in lines[0]["messages"]] == ["question one", "first answer"]

    other = tmp_path / "other-home"
    result = run_cli_with_home(other, "sessions", "import", str(dump))
    assert "imported 2 session(s) (4 messages)" in result.stdout
    again = run_cli_with_home(other, "sessions", "import", str(dump))
    assert "imported 0 session(s)" in again.stdout and "skipped 2" in again.stdout
    exported = run_cli_with_home(other, "sessions", "export").stdout.splitlines()
    assert [json.loads(x)["messages"] for x in exported] == [s["messages"] for s in lines]


def test_import_rejects_malformed_lines_with_numbers(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "ok", "messages": [{"role": "user", "content": "hi"}]}\n'
        "not json\n"
        '{"id": "bad id!", "messages": []}\n'
        '{"id": "x", "messages": [{"role": "wizard", "content": "hi"}]}\n'
    )
    result = run_cli("sessions", "import", str(bad))
    assert result.returncode == 2
    assert "line 2: not valid JSON" in result.stderr
    assert "line 3: id:" in result.stderr
    assert "line 4: messages.0.role" in result.stderr
    assert "nothing was imported" in result.stderr
    assert json.loads(run_cli("sessions", "list", "--json").stdout) == []


def test_show_and_delete(model_env: dict, fake: FakeModel) -> None:
    fake.enqueue(Text("pong"))
    run_cli("chat", "-q", "ping", "--session", "x")
    shown = run_cli("sessions", "show", "x")
    assert "user: ping" in shown.stdout and "assistant: pong" in shown.stdout
    missing = run_cli("sessions", "show", "nope")
    assert missing.returncode == 1 and "no session 'nope'" in missing.stderr
    assert run_cli("sessions", "delete", "x", "--yes").returncode == 0
    assert json.loads(run_cli("sessions", "list", "--json").stdout) == []


def run_cli_with_home(home: Path, *args: str):
    import os
    import subprocess
    import sys

    env = dict(os.environ, HERMES_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_setup_writes_config_and_private_env(home: Path, fake: FakeModel) -> None:
    result = run_cli("setup", "--base-url", fake.base_url, input="sk-test-123\nfake-model\ny\n")
    assert result.returncode == 0, result.stderr
    assert "the endpoint answers" in result.stdout
    assert "sk-test-123" not in result.stdout
    assert "base_url: " + fake.base_url in (home / "config.yaml").read_text()
    env = (home / ".env").read_text()
    assert "OPENAI_API_KEY=sk-test-123" in env and "HERMES_API_KEY=" in env
    assert (home / ".env").stat().st_mode & 0o777 == 0o600
    fake.enqueue(Text("configured"))
    assert run_cli("chat", "-q", "hi").stdout == "configured\n"
    assert fake.headers[-1].get("authorization") == "Bearer sk-test-123"


def test_import_takes_several_files_in_order_and_stops_at_a_malformed_one(
    tmp_path: Path,
) -> None:
    def session(sid: str, text: str) -> str:
        return json.dumps({"id": sid, "messages": [{"role": "user", "content": text}]}) + "\n"

    one, two, bad = tmp_path / "one.jsonl", tmp_path / "two.jsonl", tmp_path / "bad.jsonl"
    one.write_text(session("a", "first") + session("b", "second"))
    two.write_text(session("b", "again") + session("c", "third"))
    bad.write_text(session("d", "fourth") + "not json\n")
    result = run_cli("sessions", "import", str(one), str(two))
    assert result.returncode == 0, result.stderr
    assert "imported 3 session(s) (3 messages), skipped 1 already present" in result.stdout
    result = run_cli("sessions", "import", str(bad), str(one))
    assert result.returncode == 2 and "nothing was imported" in result.stderr
    three = tmp_path / "three.jsonl"
    three.write_text(session("e", "fifth"))
    result = run_cli("sessions", "import", str(three), str(bad), str(one))
    assert result.returncode == 2
    assert f"{bad}: line 2: not valid JSON" in result.stderr
    assert "nothing of it was imported; the 1 file(s) before it were" in result.stderr
    listed = json.loads(run_cli("sessions", "list", "--json").stdout)
    assert sorted(s["id"] for s in listed) == ["a", "b", "c", "e"]


def test_doctor_json_is_one_document_a_script_can_read(model_env: dict) -> None:
    result = run_cli("doctor", "--json")
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["ok"] is True
    checks = {c["check"]: c for c in report["checks"]}
    assert {"config", "store", "model endpoint", "port"} <= set(checks)
    assert (
        checks["model endpoint"]["status"] == "ok"
        and "answers" in checks["model endpoint"]["detail"]
    )
    assert all(c["status"] in ("ok", "fail", "warn", "note") for c in report["checks"])


def test_doctor_json_reports_a_failure_with_exit_1() -> None:
    result = run_cli("doctor", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    [model] = [c for c in report["checks"] if c["check"] == "model endpoint"]
    assert model["status"] == "fail" and "OPENAI_BASE_URL" in model["detail"]


def test_doctor_without_config_or_model_says_so_and_names_the_echo_model() -> None:
    result = run_cli("doctor")
    assert result.returncode == 1
    out = result.stdout
    [config] = [line for line in out.splitlines() if " config:" in line]
    assert not config.startswith("ok") and "no config.yaml" in config
    assert "defaults and the environment" in config and "hermes setup" in config
    [model] = [line for line in out.splitlines() if "model endpoint" in line]
    assert "hermes setup" in model
    assert "python -m hermes.testing.fake_model --port 8000 &" in model
    assert "OPENAI_BASE_URL=http://127.0.0.1:8000/v1 HERMES_MODEL=echo" in model
    assert len([line for line in out.splitlines() if " tools:" in line]) == 1


def test_doctor_names_an_existing_config_file(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("timezone: UTC\n")
    result = run_cli("doctor")
    assert f"ok   config: {home / 'config.yaml'}" in result.stdout


def test_one_shot_chat_against_a_dead_endpoint_fails_fast_and_says_what_to_do(
    monkeypatch,
) -> None:
    with FakeModel() as dead:
        url = dead.base_url
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("HERMES_MODEL", "echo")
    started = time.monotonic()
    result = run_cli("chat", "-q", "hi")
    assert time.monotonic() - started < 5  # was ~8 s of back-off before a word
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert url in result.stderr and "refused" in result.stderr
    assert "hermes doctor" in result.stderr


def test_one_shot_chat_loads_only_what_a_turn_needs(model_env: dict, fake: FakeModel) -> None:
    """`hermes chat -q` took ~2 s against a local model, mostly imports a turn never uses: the
    openai SDK (for the model list), FastAPI (through the webhook platforms), the terminal UI
    and every other command's module. The turn itself still runs in full."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from hermes.cli.main import app\n"
        "try:\n"
        "    app(sys.argv[1:], prog_name='hermes')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('openai', 'fastapi', 'rich.markdown', 'hermes.cli.doctor', 'hermes.cli.setup',\n"
        "         'hermes.cli.memory', 'hermes.cli.serve', 'hermes.cli.repl.session')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    fake.enqueue(Text("pong"))
    result = subprocess.run(
        [sys.executable, "-c", probe, "chat", "-q", "ping", "--session", "quick"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["pong", "[]"]
    assert len(fake.chat_requests()) == 1
    assert fake.chat_requests()[0]["tools"]  # the tools are offered as before
    shown = run_cli("sessions", "show", "quick")
    assert "user: ping" in shown.stdout and "assistant: pong" in shown.stdout


def test_help_shows_flags_without_a_value() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    flags = [line for line in result.stdout.splitlines() if "--version" in line or "--help" in line]
    assert len(flags) == 2 and all("<bool>" not in line for line in flags), flags
    assert run_cli("--version").stdout.startswith("hermes ")
