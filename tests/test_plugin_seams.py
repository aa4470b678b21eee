"""A plugin installed as a real distribution (a dist-info with a `hermes.plugins` entry point on
sys.path) adds a messaging platform and a model provider through the same registry verbs the
built-ins use; `hermes plugins list` shows it, Hermes uses both, and the user can turn it off."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.gateway.base import Inbound
from hermes.gateway.runner import Gateway
from hermes.plugins import load_registry
from hermes.runtime import build_runtime
from tests.conftest import run_cli
from tests.dists import install_plugin
from tests.platforms.conftest import until

PLUGIN = '''
import asyncio

from hermes.gateway.base import PlatformAdapter, PlatformConfig, read_platform_config
from hermes.config.settings import plugin_section
from hermes.gateway.platforms import PlatformSpec, needs
from hermes.models.types import Completion
from pydantic import BaseModel

ADAPTERS = []


class EchoConfig(PlatformConfig):
    token: str | None = None


class EchoAdapter(PlatformAdapter):
    """A platform whose inbox the test fills and whose answers it reads."""

    name = "echo"

    def __init__(self, cfg):
        self.cfg = cfg
        self.inbox = asyncio.Queue()
        self.sent = []

    async def connect(self):
        ADAPTERS.append(self)

    async def listen(self, handler):
        while (message := await self.inbox.get()) is not None:
            await handler(message)

    async def disconnect(self):
        self.inbox.put_nowait(None)

    async def send(self, chat, text, *, thread=None, reply_to=None, meta=None):
        self.sent.append((chat, text))
        return None


class CannedSettings(BaseModel):
    """`plugins.echo.*`: the plugin's own section, declared next to its code."""

    verb: str = "says"


class Canned:
    """A model backend that is not an OpenAI-compatible endpoint."""

    base_url = None

    def __init__(self, model, verb):
        self.model = model
        self.verb = verb

    async def complete(self, messages, **options):
        asked = messages[-1]["content"]
        text = f"{self.model} {self.verb}: you wrote {asked!r}"
        return Completion(content=text, model=self.model)

    async def list_models(self):
        return [{"id": self.model}]

    async def warm_up(self):
        return None

    async def aclose(self):
        return None


def _create(settings):
    return EchoAdapter(read_platform_config(settings, "echo", EchoConfig))


def register(hermes):
    hermes.platform("echo", PlatformSpec("echo", needs("echo", "token"), _create))
    hermes.model_provider("canned", _canned)


def _canned(settings, model):
    verb = plugin_section(settings, "echo", CannedSettings).verb
    return Canned(model or settings.model.name, verb)
'''


@pytest.fixture
def echo_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(
        tmp_path / "site",
        monkeypatch,
        entry="echo",
        module="hermes_echo",
        source=PLUGIN,
        dist="hermes-echo",
        version="0.2",
    )
    monkeypatch.setenv("HERMES_MODEL_PROVIDER", "canned")
    monkeypatch.setenv("HERMES_MODEL", "canned-1")


def _listed(*extra: str) -> dict[str, dict]:
    result = run_cli("plugins", "list", "--json", *extra)
    assert result.returncode == 0, result.stderr
    return {p["name"]: p for p in json.loads(result.stdout)["plugins"]}


def test_plugins_list_shows_built_in_parts_and_the_installed_plugin(echo_plugin: None) -> None:
    listed = _listed()
    echo = listed["echo"]
    assert echo["enabled"] and echo["source"] == "hermes-echo 0.2"
    assert echo["registers"] == ["model_provider:canned", "platform:echo"]
    assert listed["gateway"]["source"] == "built-in"
    assert "platform:slack" in listed["gateway"]["registers"]
    assert listed["models"]["registers"] == ["model_provider:openai"]

    text = run_cli("plugins", "list").stdout
    assert "echo  (hermes-echo 0.2, hermes_echo)  enabled" in text


def test_the_plugins_model_provider_answers_hermes_chat(echo_plugin: None) -> None:
    result = run_cli("chat", "-q", "hello there")
    assert result.returncode == 0, result.stderr
    assert "canned-1 says: you wrote 'hello there'" in result.stdout

    home = load_settings().home
    (home / "config.yaml").write_text("plugins:\n  echo:\n    verb: replies\n")
    assert "canned-1 replies: you wrote 'hi'" in run_cli("chat", "-q", "hi").stdout
    (home / "config.yaml").write_text("plugins:\n  echo:\n    verb: [1]\n")
    result = run_cli("chat", "-q", "hi")
    assert result.returncode == 2 and "`plugins.echo.verb`" in result.stderr


async def test_the_plugins_platform_runs_in_the_gateway(
    echo_plugin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_GATEWAY_OWNER", "echo:ann")
    home = load_settings().home
    (home / "config.yaml").write_text("gateway:\n  echo:\n    token: t\n    allowed_users: ann\n")
    settings = load_settings()
    runtime = build_runtime(settings)
    gateway = runtime.services.get(Gateway)
    assert list(gateway.specs) == ["echo"]
    daemons = runtime.daemons()
    for daemon in daemons:
        await daemon.start()
    try:
        from hermes_echo import ADAPTERS  # type: ignore[import-not-found]

        await until(lambda: ADAPTERS, what="the echo adapter to connect")
        adapter = ADAPTERS[-1]
        adapter.inbox.put_nowait(Inbound("echo", "room", "ann", "ping"))
        await until(lambda: adapter.sent, what="the answer")
    finally:
        for daemon in reversed(daemons):
            if daemon.stop is not None:
                await daemon.stop()
        await runtime.aclose()
    assert adapter.sent == [("room", "canned-1 says: you wrote 'ping'")]
    status = json.loads(run_cli("gateway", "status", "--json").stdout)
    assert status["adapters"]["echo"]["configured"] is True


async def test_health_counts_the_plugins_model_as_configured(echo_plugin: None) -> None:
    import httpx

    from hermes.server.app import create_app

    runtime = build_runtime(load_settings())
    try:
        transport = httpx.ASGITransport(app=create_app(runtime))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            health = (await client.get("/health")).json()
    finally:
        await runtime.aclose()
    assert health["status"] == "ok" and health["model_configured"] is True


def test_hermes_load_plugins_none_turns_the_plugin_off(
    echo_plugin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "none")
    echo = _listed()["echo"]
    assert not echo["enabled"] and echo["registers"] == []
    result = run_cli("chat", "-q", "hello there")
    assert result.returncode != 0
    assert "model.provider 'canned' is not a model provider Hermes knows" in result.stderr
    assert "hermes plugins list" in result.stderr
    assert "hermes_echo" not in sys.modules  # a plugin turned off is not even imported


def test_plugins_disabled_in_config_turns_it_off_and_load_names_the_wanted_ones(
    echo_plugin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = load_settings().home
    (home / "config.yaml").write_text("plugins:\n  disabled: [echo]\n")
    assert not _listed()["echo"]["enabled"]
    registry = load_registry(load_settings())
    assert "echo" not in registry.platforms and "canned" not in registry.model_providers

    (home / "config.yaml").write_text("")
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "echo,weather")
    assert _listed()["echo"]["enabled"]
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "weather")
    assert not _listed()["echo"]["enabled"]
