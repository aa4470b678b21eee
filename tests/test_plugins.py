"""Parts and third-party plugins share one mechanism: `register(hermes)` through the Registry."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hermes.agent.context import PromptContext
from hermes.agent.memory_providers import MemoryProvider
from hermes.agent.turn import TurnRequest, TurnResult
from hermes.config.settings import Settings
from hermes.plugins import BUILTIN_PARTS, PluginError, Registry, load_registry
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from hermes.tools.registry import tool
from tests.dists import install_plugin

PLUGIN = '''
from hermes.tools.registry import tool

@tool
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city's name
    """
    return f"Sunny in {city}"

def forecasts(runtime):
    from hermes.plugins import Count

    yield Count("weather_forecasts", "Forecasts given.", 3, {"city": "Oslo"})


def broken_counts(runtime):
    raise RuntimeError("the counter file is gone")


def register(hermes):
    hermes.tool(weather, group="web")
    hermes.prompt_block(lambda settings: lambda ctx: f"Weather desk open for {ctx.platform}.")
    hermes.metrics(broken_counts)
    hermes.metrics(forecasts)
'''


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real installed distribution with a `hermes.plugins` entry point (dist-info on sys.path)."""
    install_plugin(
        tmp_path / "site",
        monkeypatch,
        entry="weather",
        module="hermes_weather",
        source=PLUGIN,
        dist="hermes-weather",
    )


def test_builtin_parts_register_through_the_registry() -> None:
    registry = load_registry(plugins=False)
    assert registry.loaded == list(BUILTIN_PARTS)
    names = [e.tool.name for e in registry.tools]
    assert {
        "session_search",
        "cronjob",
        "read_file",
        "terminal",
        "delegate_task",
        "send_message",
        "skills_list",
        "skill_view",
        "skill_manage",
    } <= set(names)
    made = [p(Settings(home=Path("/nonexistent"))) for p in registry.memory_providers]
    providers = [p.name for p in made if p is not None]  # externals: only when chosen
    assert providers == ["notes", "skills"]


def test_two_tools_with_one_name_are_refused() -> None:
    @tool
    def twin() -> str:
        """A tool."""
        return ""

    registry = Registry()
    registry.tool(twin)
    with pytest.raises(PluginError, match="twin"):
        registry.tool(twin)


async def test_entry_point_plugin_adds_a_tool_and_a_prompt_block(
    installed_plugin: None, settings: Settings, fake: FakeModel
) -> None:
    registry = load_registry()
    assert "plugin:weather" in registry.loaded
    fake.enqueue(
        ToolCalls([("weather", {"city": "Oslo"})]),
        Text("It is sunny in Oslo."),
    )
    runtime = build_runtime(settings, registry=registry)
    try:
        result = await runtime.agent.run_turn(TurnRequest("Weather in Oslo?", session_id="w"))
    finally:
        await runtime.aclose()
    assert result.content == "It is sunny in Oslo."
    first, second = fake.chat_requests()
    assert "weather" in [t["function"]["name"] for t in first["tools"]]
    assert "Weather desk open for cli." in first["messages"][0]["content"]
    tool_results = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_results[-1]["content"] == "Sunny in Oslo"


def test_a_plugin_adds_counters_to_metrics_and_a_broken_one_is_skipped(
    installed_plugin: None, settings: Settings
) -> None:
    from hermes.server.metrics import Metrics

    runtime = build_runtime(settings, registry=load_registry())
    try:
        scraped = Metrics(runtime).render(None).decode()
    finally:
        asyncio.run(runtime.aclose())
    assert 'hermes_weather_forecasts_total{city="Oslo"} 3.0' in scraped
    assert 'hermes_cron_runs_total{outcome="ok"} 0.0' in scraped  # the built-in parts' too


def test_a_broken_plugin_is_skipped_and_hermes_still_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = "def register(hermes):\n    raise RuntimeError('x')\n"
    install_plugin(
        tmp_path / "site",
        monkeypatch,
        entry="broken",
        module="hermes_broken",
        source=broken,
        dist="hermes-broken",
    )
    registry = load_registry()
    assert "plugin:broken" not in registry.loaded
    assert registry.loaded[: len(BUILTIN_PARTS)] == list(BUILTIN_PARTS)
    assert "plugin 'broken'" in caplog.text
    listed = {p.name: p for p in registry.plugins}
    assert not listed["broken"].enabled and listed["broken"].error == "x"  # `plugins list`


def test_a_plugin_whose_tool_has_no_valid_schema_is_skipped_with_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool builds its argument model when first asked for it; a plugin's tools are asked at
    load, so a tool pydantic cannot describe skips its plugin there, not at the first turn."""
    source = """
from hermes.tools.registry import tool


class Opaque:
    pass


@tool
def fine(text: str) -> str:
    \"\"\"Echo.

    Args:
        text: what to echo
    \"\"\"
    return text


@tool
def odd(thing: Opaque) -> str:
    \"\"\"Takes what no schema describes.

    Args:
        thing: an object
    \"\"\"
    return "?"


def register(hermes):
    hermes.tool(fine)
    hermes.tool(odd)
"""
    install_plugin(
        tmp_path / "site",
        monkeypatch,
        entry="odd",
        module="hermes_odd",
        source=source,
        dist="hermes-odd",
    )
    registry = load_registry()
    assert "plugin:odd" not in registry.loaded
    assert "plugin 'odd'" in caplog.text
    names = {entry.tool.name for entry in registry.tools}
    assert "fine" not in names and "odd" not in names
    listed = {p.name: p for p in registry.plugins}
    assert not listed["odd"].enabled


class _Recall(MemoryProvider):
    """An external provider: a prompt block that sees the opening message, and per-turn recall."""

    name = "recall"

    def __init__(self, settings: Settings, *, slow: bool = False) -> None:
        self.slow = slow
        self.synced: list[str] = []

    def system_prompt_block(self, ctx: PromptContext) -> str | None:
        return f"Opened with: {ctx.user_message}"

    async def prefetch(self, scope: str, session_id: str, user_message: str) -> str | None:
        if self.slow:
            await asyncio.Event().wait()  # never answers: the turn must not wait for it
        return f"Recalled for {user_message!r}"

    async def sync_turn(self, result: TurnResult) -> None:
        self.synced.append(result.content)


@pytest.mark.parametrize("slow", [False, True])
async def test_external_memory_provider_hooks(
    settings: Settings, fake: FakeModel, monkeypatch: pytest.MonkeyPatch, slow: bool
) -> None:
    monkeypatch.setattr("hermes.agent.memory_providers.PREFETCH_TIMEOUT_S", 0.05)
    provider = _Recall(settings, slow=slow)
    registry = load_registry(plugins=False)
    registry.memory_provider(lambda _settings: provider)
    fake.enqueue(Text("hello"))
    runtime = build_runtime(settings, registry=registry)
    try:
        await runtime.agent.run_turn(TurnRequest("hi there", session_id="p"))
        await runtime.agent.drain()
    finally:
        await runtime.aclose()
    messages = fake.chat_requests()[0]["messages"]
    assert "Opened with: hi there" in messages[0]["content"]
    recalled = [m["content"] for m in messages if "Recalled for" in m["content"]]
    assert len(recalled) == (0 if slow else 1)
    for text in recalled:  # fenced as recalled memory, never the user's words
        assert text.startswith("<memory-context>") and text.endswith("</memory-context>")
        assert "Recalled for 'hi there'" in text
    assert provider.synced == ["hello"]


def test_only_one_external_memory_provider(settings: Settings) -> None:
    registry = load_registry(plugins=False)
    registry.memory_provider(_Recall)
    registry.memory_provider(_Recall)
    with pytest.raises(ValueError, match="at most one external memory provider"):
        build_runtime(settings, registry=registry)
