import stat
from pathlib import Path

import pytest

from hermes.config.settings import ConfigError, load_settings
from tests.conftest import run_cli


def test_defaults_and_home_layout_created_private(home: Path) -> None:
    s = load_settings()
    assert s.home == home
    assert s.server.port == 11434 and s.server.host == "127.0.0.1"
    assert s.compression.threshold == 0.5
    assert s.model.base_url is None
    for sub in ("memories", "users", "skills", "cron", "logs"):
        assert (home / sub).is_dir()
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_precedence_yaml_then_dotenv_then_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text(
        "model:\n  base_url: http://yaml/v1\n  name: yaml-model\nserver:\n  port: 9000\n"
    )
    (home / ".env").write_text("HERMES_MODEL=dotenv-model\nHERMES_PORT=9001\n")
    (home / ".env").chmod(0o644)
    monkeypatch.setenv("HERMES_PORT", "9002")
    s = load_settings()
    assert s.model.base_url == "http://yaml/v1"  # only in yaml
    assert s.model.name == "dotenv-model"  # .env beats yaml
    assert s.server.port == 9002  # environment beats both
    assert stat.S_IMODE((home / ".env").stat().st_mode) == 0o600  # secrets tightened


def test_secret_never_prints(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-supersecret-123456")
    s = load_settings()
    assert "sk-supersecret" not in repr(s) and "sk-supersecret" not in str(s.model)
    assert (
        s.model.api_key is not None
        and s.model.api_key.get_secret_value() == "sk-supersecret-123456"
    )


def test_malformed_yaml_names_file_and_line(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("model:\n  name: [unclosed\n")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "config.yaml" in str(err.value) and "line" in str(err.value)


def test_bad_value_names_the_key(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("compression:\n  threshold: 0.2\n")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "compression.threshold" in str(err.value) and "config.yaml" in str(err.value)


def test_unknown_key_and_bad_env_value(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("model:\n  nmae: typo\n")
    with pytest.raises(ConfigError, match=r"model\.nmae.*unknown key"):
        load_settings()
    (home / "config.yaml").write_text("")
    monkeypatch.setenv("HERMES_PORT", "eleven")
    with pytest.raises(ConfigError, match=r"HERMES_PORT \(environment\).*server\.port"):
        load_settings()


def test_a_model_url_with_credentials_is_refused_naming_where_the_key_goes(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key goes as a bearer token; a user:password in the URL made every plain model call
    fail (the HTTP client cannot send both), so it is a configuration error, said up front."""
    home.mkdir(parents=True)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://me:secret@127.0.0.1:8000/v1")
    with pytest.raises(ConfigError, match=r"OPENAI_BASE_URL.*user name or password.*api_key"):
        load_settings()
    monkeypatch.delenv("OPENAI_BASE_URL")
    fallback = "model:\n  fallbacks:\n    - name: b\n      base_url: https://k@m.example/v1\n"
    (home / "config.yaml").write_text(fallback)
    with pytest.raises(ConfigError, match=r"model\.fallbacks.*user name or password"):
        load_settings()
    (home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:8000/v1?a=b@c\n")
    assert load_settings().model.base_url == "http://127.0.0.1:8000/v1?a=b@c"  # @ past the host


def test_cli_reports_bad_config_without_traceback(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("- just\n- a list\n")
    result = run_cli("chat", "-q", "hi")
    assert result.returncode == 2
    assert "config.yaml" in result.stderr and "Traceback" not in result.stderr


def test_timezone_must_be_iana(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ConfigError, match="HERMES_TIMEZONE.*IANA"):
        load_settings()
    monkeypatch.setenv("HERMES_TIMEZONE", "Europe/Berlin")
    assert load_settings().timezone == "Europe/Berlin"


def test_database_url_defaults_to_sqlite_in_home_and_environment_overrides(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes.runtime import open_store
    from hermes.store.urls import redact

    s = load_settings()
    assert s.database_url == f"sqlite:///{str(home / 'state.db').lstrip('/')}"
    store = open_store(s)
    try:
        assert store.url == s.database_url and (home / "state.db").exists()
    finally:
        store.close()
    other = home / "elsewhere" / "x.db"
    monkeypatch.setenv("HERMES_DATABASE_URL", f"sqlite:///{other}")
    s = load_settings()
    store = open_store(s)
    store.close()
    assert other.exists()
    assert redact("postgresql://bob:hunter2@db:5432/h") == "postgresql://bob:***@db:5432/h"


def test_unknown_database_url_is_a_config_error(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_DATABASE_URL", "mysql://db/hermes")
    with pytest.raises(ConfigError, match=r"HERMES_DATABASE_URL.*postgresql://"):
        load_settings()
