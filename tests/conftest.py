"""Hermetic test setup: temp HERMES_HOME, no credentials from the machine, a fake model."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hermes.config.settings import Settings, load_settings
from hermes.runtime import Runtime, build_runtime
from hermes.testing.fake_model import FakeModel

if TYPE_CHECKING:
    import pexpect

pytest_plugins = ["tests.hang_watch", "tests.model_cache"]

_CREDENTIAL = re.compile(r"(_API_KEY|_TOKEN|_SECRET|_PASSWORD)$")
_HERMES_VARS = (
    "OPENAI_BASE_URL",
    "HERMES_MODEL",
    "HERMES_MODEL_PROVIDER",
    "HERMES_LOAD_PLUGINS",
    "HERMES_CONTEXT_LENGTH",
    "HERMES_HOST",
    "HERMES_PORT",
    "HERMES_TIMEZONE",
    "HERMES_HOME",
    "HERMES_PROFILE",
    "HERMES_SESSION_SCOPES",
    "HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND",
    "HERMES_DATABASE_URL",
    "HERMES_WORKDIR",
    "SEARXNG_URL",
    "HERMES_VISION",
    "HERMES_TTS_MODE",
    "HERMES_TTS_BASE_URL",
    "HERMES_STT_BASE_URL",
    "HERMES_STT_MODEL",
)


_PLATFORM_PREFIXES = (
    "TELEGRAM_",
    "EMAIL_",
    "MATRIX_",
    "SLACK_",
    "DISCORD_",
    "WHATSAPP_",
    "TWILIO_",
    "SMS_",
)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that need a real server get the `integration` marker (tests/tiers.py says how)."""
    from tests import tiers

    tiers.mark_integration(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection built (every imported module, every test item) out of the
    garbage collector's reach: a full collection then walks only what tests make, where it
    walked hundreds of thousands of long-lived objects (the compat clients' libraries) each
    time, in CPython's own collections and in the teardowns that call `gc.collect()`."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def hermetic_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Path:
    for name in list(os.environ):
        if (
            _CREDENTIAL.search(name)
            or name in _HERMES_VARS
            or name.startswith(("OPENAI_", "HERMES_GATEWAY_", *_PLATFORM_PREFIXES))
        ):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "hermes-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    # semantic search loads a model (seconds, hundreds of MB): only the tests marked for it
    # get it, in this process (settings built directly too) and in subprocesses
    if request.node.get_closest_marker("semantic") is None:
        monkeypatch.setenv("HERMES_EMBEDDINGS", "off")
        monkeypatch.setattr("hermes.memory.embeddings.extra_installed", lambda: False)
    else:
        from tests import model_cache  # (a plugin of this conftest: imported after it)

        model_cache.seed(home, request.getfixturevalue("embedding_graphs"))
    monkeypatch.setenv("TZ", "UTC")
    return home


@pytest.fixture(autouse=True)
def plugin_entry_points_per_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed plugins are looked up once per `sys.path`, not at every runtime built: the
    lookup reads every installed distribution's metadata (hundreds, with the test extra). A
    test that installs a plugin puts a folder on `sys.path` (tests/dists.py), so it is seen."""
    monkeypatch.setattr("hermes.plugins._plugin_entry_points", _entry_points_for_path)


_ENTRY_POINTS: dict[tuple[str, ...], tuple[Any, ...]] = {}


def _entry_points_for_path() -> tuple[Any, ...]:
    from hermes.plugins import ENTRY_POINT_GROUP

    key = tuple(sys.path)
    if key not in _ENTRY_POINTS:
        _ENTRY_POINTS[key] = tuple(entry_points(group=ENTRY_POINT_GROUP))
    return _ENTRY_POINTS[key]


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This process's SQLite database migrated once by the real code (tests/sqlite_template.py)."""
    from tests import sqlite_template

    return sqlite_template.make_template(tmp_path_factory.mktemp("template") / "state.db")


@pytest.fixture(autouse=True)
def sqlite_from_template(migrated_sqlite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new SQLite store starts as a copy of `migrated_sqlite`: the same schema, without
    running every migration again in every test."""
    from tests import sqlite_template

    sqlite_template.install(monkeypatch, migrated_sqlite)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """The URL of this test run's own PostgreSQL database (created once, dropped at the end)."""
    from tests import pg

    name = pg.create_database()
    try:
        yield pg.url_for(name)
    finally:
        pg.drop_database(name)


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """This run's PostgreSQL database, emptied for the test."""
    from tests import pg

    pg.empty_database(pg_database)
    return pg_database


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each backend in turn: a fresh SQLite file, or this run's emptied PostgreSQL database."""
    if request.param == "sqlite":
        return "sqlite:///" + str(tmp_path / "state.db").lstrip("/")
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def on_each_backend(store_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per backend: `pytestmark = pytest.mark.usefixtures("on_each_backend")`
    (settings built after it pick the database up from HERMES_DATABASE_URL)."""
    monkeypatch.setenv("HERMES_DATABASE_URL", store_url)
    return store_url


@pytest.fixture
def home(hermetic_env: Path) -> Path:
    return hermetic_env


@pytest.fixture
def fake() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


@pytest.fixture
def model_env(fake: FakeModel, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Point Hermes at the fake model through the real configuration path (environment)."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("HERMES_MODEL", "fake-model")
    return {"OPENAI_BASE_URL": fake.base_url, "HERMES_MODEL": "fake-model"}


@pytest.fixture
def settings(model_env: dict[str, str], home: Path) -> Settings:
    s = load_settings()
    s.model.max_retries = 0
    return s


@pytest.fixture
async def runtime(settings: Settings) -> AsyncIterator[Runtime]:
    rt = build_runtime(settings)
    try:
        yield rt
    finally:
        await rt.aclose()


def run_cli(
    *args: str, input: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the `hermes` CLI in-process (typer's CliRunner) with the test's environment.

    Same result shape as a subprocess; `run_cli_subprocess` is the real-process variant kept for
    the few smoke tests that need a separate interpreter (signals, concurrency, exit paths)."""
    from typer.testing import CliRunner

    from hermes.cli.main import app

    result = CliRunner().invoke(app, list(args), input=input, env=dict(os.environ))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(
        ["hermes", *args], result.exit_code, result.stdout, result.stderr
    )


def run_cli_subprocess(
    *args: str, input: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the `hermes` CLI as a real subprocess with the test's environment."""
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        capture_output=True,
        text=True,
        input=input,
        timeout=timeout,
        env=dict(os.environ),
    )


def spawn_chat(*args: str, cwd: Path | None = None, **env: str) -> pexpect.spawn:
    """`hermes chat ARGS` in a real pseudo-terminal (xterm, 40×120), 20 s for each expect."""
    import pexpect

    return pexpect.spawn(
        sys.executable,
        ["-m", "hermes", "chat", *args],
        cwd=str(cwd) if cwd is not None else None,
        env=dict(os.environ, TERM="xterm", **env),
        encoding="utf-8",
        timeout=20,
        dimensions=(40, 120),
    )


@contextmanager
def chat_in_pty(*args: str, cwd: Path | None = None) -> Iterator[pexpect.spawn]:
    """`spawn_chat` once its banner is shown; at the end `/exit` ends it (EOF), and it is
    closed whatever happened (its `exitstatus` is then set)."""
    import pexpect

    child = spawn_chat(*args, cwd=cwd)
    try:
        child.expect("for commands")
        yield child
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
