"""`model.fallbacks`: a turn goes on with the next model when one fails in a way another may
not (5xx, unreachable, 429, a prompt too long for a smaller window), the failed model rests
(across restarts too), and a model that is merely refusing the request is not switched away from."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from hermes import tls
from hermes.config.settings import load_settings
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from hermes.testing.fake_model import ContextLengthError, Error, FakeModel, Hang, Raw, Text


@pytest.fixture
def backup() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


def write_config(home: Path, cfg: dict[str, object]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")


def configure(home: Path, backup: FakeModel, **model: object) -> None:
    fallbacks = [{"base_url": backup.base_url, "name": "backup-model"}]
    write_config(home, {"model": {"max_retries": 0, "fallbacks": fallbacks, **model}})


@pytest.fixture
async def client(
    fake: FakeModel, backup: FakeModel, model_env: dict[str, str], home: Path
) -> AsyncIterator[httpx.AsyncClient]:
    configure(home, backup)
    runtime = build_runtime(load_settings())
    app = create_app(runtime)
    async with httpx.AsyncClient(
        verify=tls.httpx_context(),
        transport=httpx.ASGITransport(app=app),
        base_url="http://hermes.test",
    ) as c:
        yield c
    await runtime.aclose()


async def ask(client: httpx.AsyncClient, text: str, **extra: object) -> httpx.Response:
    body = {"model": "hermes", "messages": [{"role": "user", "content": text}], **extra}
    return await client.post("/v1/chat/completions", json=body)


async def test_a_failing_model_hands_the_turn_to_the_next_and_rests(
    client: httpx.AsyncClient, fake: FakeModel, backup: FakeModel, home: Path
) -> None:
    fake.enqueue(Error(503, "overloaded"))
    backup.enqueue(Text("from the backup"), Text("backup again"))
    r = await ask(client, "hello")
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "from the backup"
    assert backup.chat_requests()[0]["model"] == "backup-model"
    # the failed model rests: the next turn goes straight to the backup
    r = await ask(client, "again")
    assert r.json()["choices"][0]["message"]["content"] == "backup again"
    assert len(fake.chat_requests()) == 1
    # the rest is a store record (state.db here; PostgreSQL shares it with every replica)
    assert not (home / "model_cooldowns.json").exists()


async def test_streamed_answers_fall_back_before_the_first_word(
    client: httpx.AsyncClient, fake: FakeModel, backup: FakeModel
) -> None:
    fake.enqueue(Error(429, "slow down"))
    backup.enqueue(Text("streamed from the backup"))
    r = await ask(client, "hello", stream=True)
    assert r.status_code == 200
    chunks = [
        json.loads(line[5:])
        for line in r.text.splitlines()
        if line.startswith("data:") and line.strip() != "data: [DONE]"
    ]
    said = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert said == "streamed from the backup"


async def test_a_refused_request_is_not_sent_elsewhere(
    client: httpx.AsyncClient, fake: FakeModel, backup: FakeModel
) -> None:
    fake.enqueue(Error(400, "bad request: unknown parameter"))
    r = await ask(client, "hello")
    assert r.status_code >= 400
    assert backup.chat_requests() == []


async def test_a_prompt_too_long_goes_to_a_larger_window_only(
    fake: FakeModel, backup: FakeModel, model_env: dict[str, str], home: Path
) -> None:
    cfg = {
        "model": {
            "max_retries": 0,
            "context_length": 8192,
            "fallbacks": [
                {"base_url": backup.base_url, "name": "small", "context_length": 4096},
                {"base_url": backup.base_url, "name": "large", "context_length": 128000},
            ],
        }
    }
    write_config(home, cfg)
    runtime = build_runtime(load_settings())
    try:
        fake.enqueue(ContextLengthError(limit=8192))
        backup.enqueue(Text("the large window answers"))
        completion = await runtime.model.complete([{"role": "user", "content": "long"}])
        assert completion.content == "the large window answers"
        assert [r["model"] for r in backup.chat_requests()] == ["large"]
    finally:
        await runtime.aclose()


async def test_the_rest_survives_a_restart(
    fake: FakeModel, backup: FakeModel, model_env: dict[str, str], home: Path
) -> None:
    configure(home, backup, fallback_cooldown=600)
    first = build_runtime(load_settings())
    try:
        fake.enqueue(Error(500, "down"))
        backup.enqueue(Text("one"))
        assert (await first.model.complete([{"role": "user", "content": "a"}])).content == "one"
    finally:
        await first.aclose()
    second = build_runtime(load_settings())
    try:
        backup.enqueue(Text("two"))
        assert (await second.model.complete([{"role": "user", "content": "b"}])).content == "two"
        assert len(fake.chat_requests()) == 1  # the restarted process did not try it again
    finally:
        await second.aclose()


async def test_a_model_that_does_not_answer_in_time_hands_the_turn_on(
    fake: FakeModel, backup: FakeModel, model_env: dict[str, str], home: Path
) -> None:
    """A hanging model costs `model.timeout`, then the turn goes on with the next."""
    configure(home, backup, timeout=0.5)
    runtime = build_runtime(load_settings())
    try:
        fake.enqueue(Hang(30, then=Text("too late")))
        backup.enqueue(Text("the backup was on time"))
        completion = await runtime.model.complete([{"role": "user", "content": "hi"}])
        assert completion.content == "the backup was on time"
        # it rests: the next call goes straight to the backup, without waiting again
        backup.enqueue(Text("again"))
        assert (await runtime.model.complete([{"role": "user", "content": "b"}])).content == "again"
        assert len(fake.chat_requests()) == 1
    finally:
        await runtime.aclose()


async def test_an_unreachable_model_hands_the_turn_on(
    backup: FakeModel, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed}/v1")
    monkeypatch.setenv("HERMES_MODEL", "down-model")
    configure(home, backup)
    runtime = build_runtime(load_settings())
    try:
        backup.enqueue(Text("the backup answers"))
        completion = await runtime.model.complete([{"role": "user", "content": "hi"}])
        assert completion.content == "the backup answers"
        assert backup.chat_requests()[0]["model"] == "backup-model"
    finally:
        await runtime.aclose()


async def test_each_fallback_gets_its_own_key_and_never_the_main_models(
    fake: FakeModel, model_env: dict[str, str], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fallback's `api_key` goes to its endpoint; one without a key at another endpoint is
    called without one: the main model's key never leaves the main model's endpoint."""
    main_key, spare_key = "sk-main-0123456789abcdef", "sk-spare-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", main_key)
    with FakeModel(api_key=spare_key) as keyed, FakeModel() as open_endpoint:
        fallbacks = [
            {"base_url": keyed.base_url, "name": "keyed", "api_key": spare_key},
            {"base_url": open_endpoint.base_url, "name": "open"},
        ]
        model = {"max_retries": 0, "fallbacks": fallbacks, "fallback_cooldown": 0}
        write_config(home, {"model": model})
        runtime = build_runtime(load_settings())
        try:  # no rest periods: every call starts at the main model
            fake.enqueue(Error(503, "down"), Error(503, "down again"))
            keyed.enqueue(Text("keyed answers"), Error(500, "keyed down"))
            open_endpoint.enqueue(Text("open answers"))
            reply = await runtime.model.complete([{"role": "user", "content": "a"}])
            assert reply.content == "keyed answers"
            reply = await runtime.model.complete([{"role": "user", "content": "b"}])
            assert reply.content == "open answers"
        finally:
            await runtime.aclose()
        assert [h["authorization"] for h in fake.headers] == [f"Bearer {main_key}"] * 2
        assert [h["authorization"] for h in keyed.headers] == [f"Bearer {spare_key}"] * 2
        [sent] = [h.get("authorization", "") for h in open_endpoint.headers]
        assert main_key not in sent and spare_key not in sent


async def test_an_answer_cut_off_after_it_began_streaming_is_not_said_again_elsewhere(
    client: httpx.AsyncClient, fake: FakeModel, backup: FakeModel
) -> None:
    """The first words already reached the user: the backup would start the answer over
    beside them, so the turn fails instead of switching."""
    first = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "The answer "}}],
    }
    fake.enqueue(Raw(200, f"data: {json.dumps(first)}\n\ndata: {{broken\n\n", "text/event-stream"))
    backup.enqueue(Text("a second answer from the backup"))
    r = await ask(client, "hello", stream=True)
    said = "".join(
        (json.loads(line[5:])["choices"] or [{}])[0].get("delta", {}).get("content") or ""
        for line in r.text.splitlines()
        if line.startswith("data:") and line.strip() != "data: [DONE]" and '"choices"' in line
    )
    assert "The answer " in said and "backup" not in said
    assert '"error"' in r.text  # the stream ends by saying it failed
    assert backup.chat_requests() == []
