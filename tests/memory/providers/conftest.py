"""Shared helpers for the external memory provider tests: a runtime with a provider chosen
through config.yaml (the real configuration path) and ways to tell Hermes' own chat calls
from the calls a provider makes to the same fake model."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
import yaml

from hermes.agent.turn import TurnRequest, TurnResult
from hermes.config.settings import Settings, load_settings
from hermes.memory.providers import provider_health
from hermes.memory.providers.external import ExternalMemory
from hermes.runtime import Runtime, build_runtime
from hermes.testing.fake_model import FakeModel, Text
from tests import model_cache
from tests.memory.providers.honcho_api import KEY, HonchoAPI

SETTLE_S = 60.0  # a Mem0 worker process may take ~15 s to start on a loaded machine


def is_extraction(body: dict[str, Any]) -> bool:
    """A mem0 fact-extraction call (it asks for a JSON object)."""
    return body.get("response_format", {}).get("type") == "json_object"


def is_chat(body: dict[str, Any]) -> bool:
    return not is_extraction(body)


def facts(*texts: str) -> str:
    """mem0's extraction answer naming these facts."""
    return json.dumps({"memory": [{"text": t} for t in texts]})


def recalled_blocks(body: dict[str, Any]) -> list[str]:
    """The fenced recalled-memory messages of one chat request."""
    return [
        m["content"]
        for m in body["messages"]
        if m["role"] == "system" and str(m.get("content", "")).startswith("<memory-context>")
    ]


def write_config(home: Path, memory: dict[str, Any], **sections: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": memory, **sections}))


def make_settings() -> Settings:
    settings = load_settings()
    settings.model.max_retries = 0
    return settings


@pytest.fixture
async def provider_runtime() -> AsyncIterator[Callable[[], Runtime]]:
    """Build runtimes from the current config; each is closed (and drained) at the end."""
    made: list[Runtime] = []

    def make() -> Runtime:
        runtime = build_runtime(make_settings())
        made.append(runtime)
        return runtime

    try:
        yield make
    finally:
        for runtime in reversed(made):
            await runtime.aclose()


def provider_of(runtime: Runtime) -> ExternalMemory:
    found = [p for p in runtime.agent.memory.providers if isinstance(p, ExternalMemory)]
    assert len(found) == 1, found
    return found[0]


async def settle(runtime: Runtime) -> None:
    """Wait for after-turn tasks and the provider's worker to finish what is queued."""
    await runtime.agent.drain()
    assert await asyncio.to_thread(provider_of(runtime).worker.wait_idle, SETTLE_S)


async def timed_turn(
    runtime: Runtime, text: str, *, scope: str, session: str
) -> tuple[TurnResult, float]:
    started = time.perf_counter()
    result = await runtime.agent.run_turn(
        TurnRequest(user_message=text, scope=scope, session_id=session, source="api")
    )
    return result, time.perf_counter() - started


def record_connections(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every address this process dials from now on (the SDKs' clients included)."""
    dialled: list[Any] = []
    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> Any:
        dialled.append(address)
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return dialled


def hosts(dialled: list[Any]) -> set[str]:
    return {a[0] for a in dialled if isinstance(a, tuple)}


class StandIn(Protocol):
    """A loopback stand-in of a provider's API whose `mode` scripts misbehaviour."""

    mode: str

    @property
    def base_url(self) -> str: ...

    def release(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> None: ...


S = TypeVar("S", bound=StandIn)


@asynccontextmanager
async def serving(
    api: S, provider: str, key: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[S]:
    """`api` running, named in the environment (`<PROVIDER>_BASE_URL`, `_API_KEY`) and
    chosen in config.yaml; its hanging requests are released at the end."""
    async with api:
        env = provider.upper()
        monkeypatch.setenv(f"{env}_BASE_URL", api.base_url)
        monkeypatch.setenv(f"{env}_API_KEY", key)
        write_config(home, {"provider": provider, "review_interval": 0, "provider_timeout": 2})
        try:
            yield api
        finally:
            api.release()


async def turns_while_hanging(
    api: StandIn, fake: FakeModel, runtime: Runtime, wait_s: float
) -> dict[str, Any]:
    """Four turns while the provider hangs, each under half a second; then the hanging
    calls are released and the worker drained. The provider's health after."""
    fake.default = Text("ok")
    durations = []
    for n in range(4):
        _, took = await timed_turn(runtime, f"message {n}", scope="user:alice", session="h")
        durations.append(took)
    assert max(durations) < 0.5, durations
    api.release()
    await runtime.agent.drain()
    await asyncio.to_thread(provider_of(runtime).worker.wait_idle, wait_s)
    return await provider_health(runtime)


async def turns_on_garbage(fake: FakeModel, runtime: Runtime) -> None:
    """Two turns while the provider answers garbage go on as if it were not there."""
    fake.default = Text("fine")
    first, _ = await timed_turn(runtime, "hello", scope="user:alice", session="g")
    second, _ = await timed_turn(runtime, "again", scope="user:alice", session="g")
    await settle(runtime)
    assert (first.content, second.content) == ("fine", "fine")


async def alice_then_bob(
    fake: FakeModel, runtime: Runtime, said: str, asked: str, again: str
) -> tuple[list[str], list[str]]:
    """Alice says `said` (session a-1) and asks `asked` in her next session (a-2); Bob asks
    it too (b-1), then `again` (b-2). The recalled blocks of Alice's a-2, and of all Bob's."""
    fake.default = Text("Noted.")
    await timed_turn(runtime, said, scope="user:alice", session="a-1")
    await settle(runtime)
    await timed_turn(runtime, asked, scope="user:alice", session="a-2")
    await timed_turn(runtime, asked, scope="user:bob", session="b-1")
    await settle(runtime)
    await timed_turn(runtime, again, scope="user:bob", session="b-2")
    await settle(runtime)
    chats = fake.chat_requests()
    return recalled_blocks(chats[1]), [b for body in chats[2:] for b in recalled_blocks(body)]


async def lyon_and_oslo(fake: FakeModel, runtime: Runtime, prefix: str, session: str) -> None:
    """Alice tells she lives in Lyon and Bob in Oslo (scopes `<prefix>alice`, `<prefix>bob`),
    each fact extracted, and everything settled."""
    fake.enqueue(Text(facts("Alice lives in Lyon")), when=is_extraction)
    fake.enqueue(Text(facts("Bob lives in Oslo")), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "I live in Lyon", scope=f"{prefix}alice", session=session)
    await timed_turn(runtime, "I live in Oslo", scope=f"{prefix}bob", session=session)
    await settle(runtime)


@pytest.fixture
async def honcho(
    home: Path, model_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[HonchoAPI]:
    """Hermes set up with Honcho, served by the loopback stand-in."""
    async with serving(HonchoAPI(), "honcho", KEY, home, monkeypatch) as api:
        yield api


@pytest.fixture
def mem0_home(home: Path, model_env: dict[str, str], embedding_graphs: Path) -> Path:
    """A home set up for Mem0 (the local library, in its worker process, which embeds with
    the bundled model: its graphs made once per run, `tests/model_cache.py`)."""
    write_config(home, {"provider": "mem0", "review_interval": 0})
    model_cache.seed(home, embedding_graphs)
    return home
