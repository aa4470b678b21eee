"""Mem0 for real: the mem0ai library, qdrant's on-disk local store under $HERMES_HOME, the
bundled MiniLM, and its fact extraction answered by the fake model with scripted JSON."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.memory.providers import provider_health
from hermes.memory.providers.forget import forget_provider_memory
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Hang, Raw, Text
from tests.memory.providers.conftest import (
    facts,
    is_chat,
    is_extraction,
    make_settings,
    provider_of,
    recalled_blocks,
    settle,
    timed_turn,
    write_config,
)

pytestmark = [pytest.mark.semantic]


async def test_alice_facts_reach_her_next_session_and_never_bob(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Text(facts("Alice is allergic to peanuts")), when=is_extraction)
    fake.default = Text("Noted.")
    await timed_turn(runtime, "I am allergic to peanuts.", scope="alice", session="a-1")
    await settle(runtime)
    fake.enqueue(Text(facts()), when=is_extraction)
    fake.enqueue(Text(facts()), when=is_extraction)
    fake.enqueue(Text(facts()), when=is_extraction)

    await timed_turn(runtime, "Any snack ideas with peanuts?", scope="alice", session="a-2")
    await timed_turn(runtime, "Any snack ideas with peanuts?", scope="bob", session="b-1")
    await settle(runtime)
    await timed_turn(runtime, "And for dinner, peanuts?", scope="bob", session="b-2")
    await settle(runtime)

    chats = [b for b in fake.chat_requests() if is_chat(b)]
    alice_new_session = recalled_blocks(chats[1])
    assert len(alice_new_session) == 1
    assert "allergic to peanuts" in alice_new_session[0]
    assert "NOT new user input" in alice_new_session[0]
    bob = [block for body in chats[2:] for block in recalled_blocks(body)]
    assert all("peanuts" not in block.split("\n\n", 1)[1] for block in bob), bob
    # the fence is a system message, never the user's turn
    assert chats[1]["messages"][-1] == {"role": "user", "content": "Any snack ideas with peanuts?"}


async def test_a_hanging_provider_adds_nothing_to_a_turn(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    write_config(mem0_home, {"provider": "mem0", "review_interval": 0, "provider_timeout": 1})
    runtime = provider_runtime()
    fake.enqueue(Hang(30), Hang(30), Hang(30), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "warm up", scope="alice", session="s")  # first turn loads the SDK
    durations = []
    for n in range(3):
        _, took = await timed_turn(runtime, f"message {n}", scope="alice", session="s")
        durations.append(took)
    assert max(durations) < 0.5, durations
    health = await provider_health(runtime)
    assert health["provider"] == "mem0"
    fake.stop()  # ends the hangs; the provider's calls fail and are reported, not raised
    await settle(runtime)
    health = await provider_health(runtime)
    assert health["failed"] >= 1 and health["status"] == "degraded", health


async def test_garbage_from_the_extraction_breaks_nothing(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Raw(200, "{not json"), Text("[1, 2"), when=is_extraction)
    fake.default = Text("fine")
    first, _ = await timed_turn(runtime, "hello", scope="alice", session="g")
    second, _ = await timed_turn(runtime, "again", scope="alice", session="g")
    await settle(runtime)
    assert (first.content, second.content) == ("fine", "fine")


async def test_secrets_are_redacted_before_they_reach_the_provider(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Text(facts()), when=is_extraction)
    fake.default = Text("ok")
    secret = "sk-proj-abcdefghijklmnopqrstuvwx1234"
    await timed_turn(runtime, f"my key is {secret}", scope="alice", session="k")
    await settle(runtime)
    extraction = next(b for b in fake.chat_requests() if is_extraction(b))
    text = str(extraction["messages"])
    assert secret not in text and "[REDACTED]" in text


async def test_forget_deletes_only_that_users_memory(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Text(facts("Alice lives in Lyon")), when=is_extraction)
    fake.enqueue(Text(facts("Bob lives in Oslo")), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "I live in Lyon", scope="alice", session="f")
    await timed_turn(runtime, "I live in Oslo", scope="bob", session="f")
    await settle(runtime)
    provider = provider_of(runtime)

    removed = forget_provider_memory(runtime.settings, "alice")

    assert removed == 1
    assert await provider.search("alice", "where does the user live", 5) == []
    assert await provider.search("bob", "where does the user live", 5) == ["Bob lives in Oslo"]
    assert forget_provider_memory(runtime.settings, "alice") == 0  # idempotent


async def test_forget_works_without_a_running_server(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    fake.enqueue(Text(facts("Alice plays cello")), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "I play the cello", scope="alice", session="c")
    await settle(runtime)
    await runtime.aclose()  # releases qdrant's lock; forgetting opens the store itself

    assert forget_provider_memory(make_settings(), "alice") == 1


SITECUSTOMIZE = """
import atexit, json, os, socket

_out = os.environ["HERMES_TEST_DIALLED"]
_connect = socket.socket.connect


def _record(sock, address):
    with open(_out, "a") as f:
        f.write(json.dumps({"address": list(address) if isinstance(address, tuple) else address}) + "\\n")
    return _connect(sock, address)


def _telemetry():
    import sys
    module = sys.modules.get("mem0.memory.telemetry")
    if module is not None:
        with open(_out, "a") as f:
            f.write(json.dumps({"telemetry": module.MEM0_TELEMETRY}) + "\\n")


socket.socket.connect = _record
atexit.register(_telemetry)
"""


async def test_only_loopback_is_dialled(
    mem0_home: Path,
    fake: FakeModel,
    provider_runtime: Callable[[], Runtime],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Both processes: the server's (patched here) and Mem0's worker (patched at its start
    by a sitecustomize on its PYTHONPATH, recording into a file)."""
    dialled: list[Any] = []
    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> Any:
        dialled.append(address)
        return real_connect(sock, address)

    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    record = tmp_path / "dialled.jsonl"
    monkeypatch.setenv("HERMES_TEST_DIALLED", str(record))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.setattr(socket.socket, "connect", connect)
    runtime = provider_runtime()
    fake.enqueue(Text(facts("Alice likes tea")), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "I like tea", scope="alice", session="t")
    await settle(runtime)
    assert await provider_of(runtime).search("alice", "drinks", 3) == ["Alice likes tea"]
    await runtime.aclose()

    hosts = {a[0] for a in dialled if isinstance(a, tuple)}
    assert hosts == {"127.0.0.1"}, dialled
    child = [json.loads(line) for line in record.read_text().splitlines()]
    child_hosts = {tuple(c["address"])[0] for c in child if isinstance(c.get("address"), list)}
    assert child_hosts == {"127.0.0.1"}, child  # the worker did reach the fake model, only it
    assert {"telemetry": False} in child, child


async def test_embeddings_from_the_model_endpoint(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    """`memory.mem0.embedder: endpoint`: mem0's vectors come from the endpoint's
    /v1/embeddings (the fake model's hashed words) instead of the bundled MiniLM."""
    from hermes.testing.fake_model import EMBEDDING_DIMENSIONS

    mem0: dict[str, Any] = {
        "embedder": "endpoint",
        "embedding_model": "fake-embed",
        "embedding_dims": EMBEDDING_DIMENSIONS,
    }
    write_config(mem0_home, {"provider": "mem0", "review_interval": 0, "mem0": mem0})
    runtime = provider_runtime()
    fake.enqueue(Text(facts("Alice keeps bees")), when=is_extraction)
    fake.default = Text("ok")
    await timed_turn(runtime, "I keep bees", scope="user:alice", session="e")
    await settle(runtime)

    assert await provider_of(runtime).search("user:alice", "who keeps bees", 3) == [
        "Alice keeps bees"
    ]
    embedded = [r for r in fake.records if r.path.endswith("/embeddings")]
    assert embedded and all(r.body.get("model") == "fake-embed" for r in embedded)
