"""Mem0 for real, at its edges: forgetting a user (with and without a running server), what
it dials, and embeddings from the model endpoint. (Split from test_mem0.py so the two files
run on different test workers: each test starts Mem0's worker process.)"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.memory.providers.forget import forget_provider_memory
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Text
from tests.memory.providers.conftest import (
    facts,
    is_extraction,
    lyon_and_oslo,
    make_settings,
    provider_of,
    settle,
    timed_turn,
    write_config,
)

pytestmark = [pytest.mark.semantic]


async def test_forget_deletes_only_that_users_memory(
    mem0_home: Path, fake: FakeModel, provider_runtime: Callable[[], Runtime]
) -> None:
    runtime = provider_runtime()
    await lyon_and_oslo(fake, runtime, "", "f")
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
