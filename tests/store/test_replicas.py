"""Two real `hermes serve` replicas (separate homes, separate processes) on one PostgreSQL
database: a session continues across them, concurrent turns on one session split over both
are stored once and in order, notes written through both are all kept, a cron slot runs
once with both ticking, and a replica killed mid-turn leaves nothing half-written and does
not keep the session locked."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes import tls
from hermes.config.settings import load_settings
from hermes.memory.notes import open_notes
from hermes.store import Store, open_store
from hermes.testing.fake_model import FakeModel, Hang, Text, ToolCalls
from tests.server.test_serve import hermes_serve

CONFIG = "memory:\n  review_interval: 0\ncron:\n  tick_seconds: 0.2\n"


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"]) if users else ""


def _script(body: dict[str, Any]) -> Any:
    """`remember: X` → a memory tool call saving X, then "saved"; anything else → "ok"."""
    said = _last_user(body)
    if said.startswith("remember: "):
        if body["messages"][-1]["role"] == "tool":
            return Text("saved")
        fact = said.removeprefix("remember: ")
        return ToolCalls([("memory", {"target": "user", "action": "add", "content": fact})])
    return Text(f"ok: {said}")


@pytest.fixture
def replicas(
    pg_url: str, fake: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[tuple[Any, str]]]:
    fake.default = _script
    started = []
    with ExitStack() as stack:
        for name in ("a", "b"):
            home = tmp_path / f"replica-{name}"
            home.mkdir()
            (home / "config.yaml").write_text(CONFIG)
            env = {
                "HERMES_HOME": str(home),
                "HERMES_DATABASE_URL": pg_url,
                "OPENAI_BASE_URL": fake.base_url,
                "HERMES_MODEL": "fake-model",
            }
            started.append(stack.enter_context(hermes_serve(env=env)))
        monkeypatch.setenv("HERMES_DATABASE_URL", pg_url)
        yield started


@pytest.fixture
def shared(pg_url: str) -> Iterator[Store]:
    store = open_store(pg_url)
    yield store
    store.close()


async def _chat(
    base: str, text: str, session: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    async with httpx.AsyncClient(verify=tls.httpx_context(), base_url=base, timeout=60) as client:
        return await client.post(
            "/v1/chat/completions",
            json={"model": "hermes", "messages": [{"role": "user", "content": text}]},
            headers={"X-Hermes-Session-Id": session, **(headers or {})},
        )


async def test_sessions_turns_and_notes_are_shared(
    replicas: list[tuple[Any, str]], fake: FakeModel, shared: Store
) -> None:
    (_, a), (_, b) = replicas
    assert (await _chat(a, "my name is Ann", "s1")).status_code == 200
    r = await _chat(b, "what is my name?", "s1")
    assert r.status_code == 200
    seen = [m.get("content") for m in fake.chat_requests()[-1]["messages"]]
    assert "my name is Ann" in seen and "ok: my name is Ann" in seen  # B saw A's turn

    texts = [f"turn {n}" for n in range(8)]
    answers = await asyncio.gather(
        *(_chat(a if n % 2 else b, t, "busy") for n, t in enumerate(texts))
    )
    assert [x.status_code for x in answers] == [200] * 8
    stored = shared.get_messages("default", "busy")
    assert [m.index for m in stored] == list(range(16))
    pairs = [(stored[i].content, stored[i + 1].content) for i in range(0, 16, 2)]
    assert all(answer == f"ok: {q}" for q, answer in pairs)  # never interleaved
    assert sorted(q for q, _ in pairs) == sorted(texts)  # each stored once

    facts = [f"fact number {n}" for n in range(6)]
    saved = await asyncio.gather(
        *(_chat(a if n % 2 else b, f"remember: {f}", f"n{n}") for n, f in enumerate(facts))
    )
    assert [x.status_code for x in saved] == [200] * 6
    settings = load_settings()
    entries = open_notes(settings, "default", shared).read("user").entries
    assert sorted(entries) == sorted(facts)  # no edit lost between the replicas


async def test_a_cron_slot_runs_once_with_both_replicas_ticking(
    replicas: list[tuple[Any, str]], fake: FakeModel, shared: Store
) -> None:
    (_, a), (_, b) = replicas
    when = (datetime.now(UTC) + timedelta(seconds=2)).isoformat(timespec="seconds")
    async with httpx.AsyncClient(verify=tls.httpx_context(), base_url=a, timeout=30) as client:
        r = await client.post(
            "/api/jobs", json={"name": "once", "schedule": when, "prompt": "cron says hi"}
        )
        assert r.status_code == 201, r.text
        job_id = r.json()["job"]["id"]
    async with httpx.AsyncClient(verify=tls.httpx_context(), base_url=b, timeout=30) as client:
        for _ in range(300):  # poll with a deadline: both replicas tick every 0.2 s
            job = (await client.get(f"/api/jobs/{job_id}")).json()["job"]
            if job.get("last_status"):
                break
            await asyncio.sleep(0.05)
        assert job["last_status"] == "ok", job
    await asyncio.sleep(1.0)  # a second claim would have happened within five ticks
    runs = [b for b in fake.chat_requests() if _last_user(b).endswith("cron says hi")]
    assert len(runs) == 1
    cron_sessions = [s for s in shared.list_sessions("default") if s.source == "cron"]
    assert len(cron_sessions) == 1


async def test_a_replica_killed_mid_turn_leaves_nothing_half_written(
    replicas: list[tuple[Any, str]], fake: FakeModel, shared: Store
) -> None:
    (proc_a, a), (_, b) = replicas
    fake.enqueue(Hang(30), when=lambda body: _last_user(body) == "slow question")
    turn = asyncio.ensure_future(_chat(a, "slow question", "k"))
    for _ in range(400):
        if any(_last_user(x) == "slow question" for x in fake.chat_requests()):
            break
        await asyncio.sleep(0.025)
    proc_a.send_signal(signal.SIGKILL)
    proc_a.wait(10)
    with pytest.raises(httpx.TransportError):
        await turn
    r = await asyncio.wait_for(_chat(b, "are you there?", "k"), 20)  # the lease is free
    assert r.status_code == 200 and json.loads(r.text)["choices"][0]["message"]["content"]
    stored = [(m.role, m.content) for m in shared.get_messages("default", "k")]
    assert stored == [("user", "are you there?"), ("assistant", "ok: are you there?")]


async def test_a_retry_on_the_other_replica_gets_the_first_answer(
    replicas: list[tuple[Any, str]], fake: FakeModel, shared: Store
) -> None:
    (_, a), (_, b) = replicas
    key = {"Idempotency-Key": "pay-42"}
    first = await _chat(a, "pay invoice 42", "idem", headers=key)
    again = await _chat(b, "pay invoice 42", "idem", headers=key)
    assert first.status_code == again.status_code == 200
    assert again.headers.get("idempotency-replayed") == "true"
    assert again.json()["choices"] == first.json()["choices"]
    assert sum(_last_user(x) == "pay invoice 42" for x in fake.chat_requests()) == 1
    assert shared.get_session("default", "idem").message_count == 2  # type: ignore[union-attr]
    other = await _chat(b, "pay invoice 43", "idem", headers=key)
    assert other.status_code == 409
