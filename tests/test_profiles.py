"""`hermes profile …` and `hermes -p NAME …` (SPEC §2, §16), through the CLI in-process."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from hermes.config.settings import load_settings
from hermes.testing.fake_model import FakeModel, Text
from tests.conftest import run_cli


def profile_dir(home: Path, name: str) -> Path:
    return home / "profiles" / name


def listed(*args: str) -> dict[str, dict]:
    result = run_cli(*args, "profile", "list", "--json")
    assert result.returncode == 0, result.stderr
    return {p["name"]: p for p in json.loads(result.stdout)["profiles"]}


def test_create_list_delete(home: Path) -> None:
    assert list(listed()) == ["default"]
    created = run_cli("profile", "create", "coder")
    assert created.returncode == 0, created.stderr
    assert str(profile_dir(home, "coder")) in created.stdout
    assert (profile_dir(home, "coder") / "memories").is_dir()
    (profile_dir(home, "coder") / ".env").write_text("HERMES_API_KEY=k\n", encoding="utf-8")
    (profile_dir(home, "coder") / "config.yaml").write_text(
        yaml.safe_dump({"model": {"name": "coder-model"}}), encoding="utf-8"
    )
    profiles = listed()
    assert list(profiles) == ["default", "coder"]
    assert profiles["coder"]["model"] == "coder-model" and profiles["coder"]["has_key"]
    assert profiles["coder"]["path"] == str(profile_dir(home, "coder"))
    assert not profiles["default"]["has_key"]
    text = run_cli("profile", "list").stdout
    assert "coder" in text and "coder-model" in text
    refused = run_cli("profile", "delete", "coder")
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert profile_dir(home, "coder").is_dir()
    deleted = run_cli("profile", "delete", "coder", "--yes")
    assert deleted.returncode == 0 and not profile_dir(home, "coder").exists()
    assert list(listed()) == ["default"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("profile", "create", "Bad Name"), "not a profile name"),
        (("profile", "create", "../escape"), "not a profile name"),
        (("profile", "create", "default"), "already exists"),
        (("profile", "delete", "default", "--yes"), "cannot be deleted"),
        (("profile", "delete", "ghost", "--yes"), "there is no profile 'ghost'"),
        (("profile", "create", "x", "--from", "ghost"), "there is no profile 'ghost'"),
        (("profile", "copy", "ghost", "x"), "there is no profile 'ghost'"),
        (("-p", "ghost", "sessions", "list"), "hermes profile create ghost"),
        (("-p", "../etc", "sessions", "list"), "not a profile name"),
        (("-p", "ghost", "setup"), "hermes profile create ghost"),
        (("-p", "ghost", "doctor"), "hermes profile create ghost"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(home: Path, args: tuple[str, ...], says: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert says in result.stderr and "Traceback" not in result.stderr
    assert not (home / "profiles" / "x").exists() and not (home / "profiles" / "ghost").exists()


def test_an_existing_profile_is_never_overwritten(home: Path) -> None:
    assert run_cli("profile", "create", "coder").returncode == 0
    soul = profile_dir(home, "coder") / "SOUL.md"
    soul.write_text("I am coder.", encoding="utf-8")
    again = run_cli("profile", "create", "coder")
    assert again.returncode == 2 and "already exists" in again.stderr
    assert run_cli("profile", "copy", "default", "coder").returncode == 2
    assert soul.read_text(encoding="utf-8") == "I am coder."


def _seed_default(home: Path) -> None:
    """A default profile with a personality, secrets, a note and a skill."""
    home.mkdir(parents=True, exist_ok=True)
    config = {
        "model": {"name": "root-model"},
        "server": {"api_key": "root-secret-key", "model_name": "hermes"},
        "gateway": {"telegram": {"token": "123:root-bot"}},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (home / ".env").write_text("OPENAI_API_KEY=sk-root\n", encoding="utf-8")
    (home / "SOUL.md").write_text("You are Root.", encoding="utf-8")
    (home / "memories").mkdir(exist_ok=True)
    (home / "memories" / "MEMORY.md").write_text("root note", encoding="utf-8")
    skill = home / "skills" / "ops" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: d\n---\nbody\n")


def test_create_from_copies_personality_but_no_notes_or_secrets(home: Path) -> None:
    _seed_default(home)
    result = run_cli("profile", "create", "twin", "--from", "default")
    assert result.returncode == 0, result.stderr
    assert "server.api_key" in result.stdout and "gateway" in result.stdout  # says what it left
    twin = profile_dir(home, "twin")
    assert (twin / "SOUL.md").read_text() == "You are Root."
    assert (twin / "skills" / "ops" / "deploy" / "SKILL.md").is_file()
    config = yaml.safe_load((twin / "config.yaml").read_text())
    assert config == {"model": {"name": "root-model"}, "server": {"model_name": "hermes"}}
    assert not (twin / ".env").exists()
    assert not (twin / "memories" / "MEMORY.md").exists()
    settings = load_settings(home=twin, profile="twin")
    assert settings.server.api_key is None and settings.model.name == "root-model"


def test_copy_clones_notes_and_sessions_but_no_secrets(
    home: Path, model_env: dict, fake: FakeModel
) -> None:
    _seed_default(home)
    fake.enqueue(Text("remembered"))
    assert run_cli("chat", "-q", "the launch code is 42", "--session", "s1").returncode == 0
    result = run_cli("profile", "copy", "default", "clone")
    assert result.returncode == 0, result.stderr
    clone = profile_dir(home, "clone")
    assert (clone / "memories" / "MEMORY.md").read_text() == "root note"
    assert not (clone / ".env").exists() and not (clone / "profiles").exists()
    with sqlite3.connect(clone / "state.db") as db:
        texts = [row[0] for row in db.execute("SELECT content FROM messages")]
    assert any("launch code is 42" in t for t in texts)
    shown = run_cli("-p", "clone", "sessions", "show", "s1")
    assert shown.returncode == 0 and "launch code is 42" in shown.stdout


def test_p_runs_a_command_in_the_profile(home: Path, model_env: dict, fake: FakeModel) -> None:
    assert run_cli("profile", "create", "coder").returncode == 0
    (profile_dir(home, "coder") / "SOUL.md").write_text("You are Coder.", encoding="utf-8")
    fake.enqueue(Text("hi from coder"))
    result = run_cli("-p", "coder", "chat", "-q", "coder secret", "--session", "c1")
    assert result.returncode == 0 and result.stdout == "hi from coder\n", result.stderr
    assert "You are Coder." in json.dumps(fake.chat_requests()[-1]["messages"][0])
    assert (profile_dir(home, "coder") / "state.db").is_file()
    in_coder = run_cli("-p", "coder", "sessions", "list", "--json").stdout
    in_default = run_cli("sessions", "list", "--json").stdout
    assert "c1" in in_coder and "c1" not in in_default


def test_flag_beats_environment(
    home: Path, model_env: dict, fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("alpha", "beta"):
        assert run_cli("profile", "create", name).returncode == 0
    monkeypatch.setenv("HERMES_PROFILE", "alpha")
    fake.default = Text("ok")
    assert run_cli("chat", "-q", "x", "--session", "by-env").returncode == 0
    assert run_cli("-p", "beta", "chat", "-q", "x", "--session", "by-flag").returncode == 0
    alpha = run_cli("sessions", "list", "--json").stdout  # HERMES_PROFILE=alpha
    beta = run_cli("-p", "beta", "sessions", "list", "--json").stdout
    assert "by-env" in alpha and "by-flag" not in alpha
    assert "by-flag" in beta and "by-env" not in beta
    monkeypatch.delenv("HERMES_PROFILE")
    assert "by-" not in run_cli("sessions", "list", "--json").stdout  # the default: neither


def test_a_profile_takes_its_own_model_and_never_the_default_key(
    home: Path, model_env: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process environment configures the default profile; a named profile's own files
    win over it, and its server key and bot tokens are never inherited from it."""
    monkeypatch.setenv("HERMES_API_KEY", "root-key")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:root-bot")
    assert run_cli("profile", "create", "coder").returncode == 0
    own = {"model": {"name": "coder-model", "fallbacks": [{"name": "coder-backup"}]}}
    (profile_dir(home, "coder") / "config.yaml").write_text(yaml.safe_dump(own))
    coder = load_settings(profile="coder")
    assert coder.model.name == "coder-model"
    assert [f.name for f in coder.model.fallbacks] == ["coder-backup"]
    assert coder.model.base_url == model_env["OPENAI_BASE_URL"]  # inherited where unset
    assert coder.server.api_key is None and coder.gateway.platform("telegram") == {}
    assert coder.server.model_name == "coder"
    root = load_settings()
    assert root.model.name == "fake-model" and root.server.api_key is not None


def test_a_bot_token_belongs_to_one_profile(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_cli("profile", "create", "coder").returncode == 0
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:shared-bot")
    (profile_dir(home, "coder") / ".env").write_text("TELEGRAM_BOT_TOKEN=123:shared-bot\n")
    listed_ = listed()
    assert listed_["coder"]["gateway"] == ["telegram"]
    for args in (("serve", "--port", "0"), ("-p", "coder", "serve", "--port", "0")):
        result = run_cli(*args)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "'default' and 'coder'" in result.stderr and "telegram" in result.stderr
        assert "123:shared-bot" not in result.stderr  # the token itself is never shown


def test_a_malformed_or_unknown_hermes_profile_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_PROFILE", "ghost")
    result = run_cli("sessions", "list")
    assert result.returncode == 2 and "there is no profile 'ghost'" in result.stderr
    assert run_cli("profile", "list").returncode == 0  # managing profiles still works
    monkeypatch.setenv("HERMES_PROFILE", "Not/A/Name")
    result = run_cli("sessions", "list")
    assert result.returncode == 2 and "not a profile name" in result.stderr
    assert not (home / "profiles").exists()


def test_delete_says_where_a_shared_databases_rows_stay(
    home: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    monkeypatch.setenv("HERMES_DATABASE_URL", pg_url)
    assert run_cli("profile", "create", "pgp").returncode == 0
    assert run_cli("-p", "pgp", "sessions", "list").returncode == 0  # opens its schema
    result = run_cli("profile", "delete", "pgp", "--yes")
    assert result.returncode == 0, result.stderr
    assert 'DROP SCHEMA "hermes_profile_pgp" CASCADE' in result.stdout
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        schemas = [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace")]
        assert "hermes_profile_pgp" in schemas
        conn.execute('DROP SCHEMA "hermes_profile_pgp" CASCADE')
