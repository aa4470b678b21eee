"""A session exists once it holds a message: a turn that fails before storing any leaves no
session behind (issue 33), on both store backends."""

from __future__ import annotations

import json

import httpx
import pytest

from hermes.config.settings import load_settings
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from hermes.testing.fake_model import Error, FakeModel, Text
from tests.conftest import run_cli

pytestmark = pytest.mark.usefixtures("on_each_backend")


def _listed() -> list[str]:
    result = run_cli("sessions", "list", "--json")
    assert result.returncode == 0, result.stderr
    return [s["id"] for s in json.loads(result.stdout)]


async def test_a_chat_refused_for_want_of_a_model_leaves_no_session(
    model_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL")
    runtime = build_runtime(load_settings())
    app = create_app(runtime)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://hermes") as http:
                r = await http.post(
                    "/v1/chat/completions",
                    json={"model": "hermes", "messages": [{"role": "user", "content": "hi"}]},
                    headers={"X-Hermes-Session-Id": "my-first-agent"},
                )
                assert r.status_code == 503
                stateless = await http.post(
                    "/v1/chat/completions",
                    json={"model": "hermes", "messages": [{"role": "user", "content": "hi"}]},
                )
                assert stateless.status_code == 503
                assert runtime.store.list_sessions("default") == []
    finally:
        await runtime.aclose()
    assert _listed() == []


def test_a_failed_one_shot_chat_leaves_no_session_and_a_later_one_keeps_its_own(
    model_env: dict[str, str], fake: FakeModel
) -> None:
    fake.enqueue(Error(400, "no such model"))
    failed = run_cli("chat", "-q", "hello", "--session", "first")
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    assert _listed() == []
    fake.enqueue(Text("hi"), Error(400, "no such model"))
    assert run_cli("chat", "-q", "hello", "--session", "first").returncode == 0
    # a failure on a session that holds messages keeps it and them
    assert run_cli("chat", "-q", "again", "--session", "first").returncode != 0
    assert _listed() == ["first"]
    shown = run_cli("sessions", "show", "first")
    assert "user: hello" in shown.stdout and "again" not in shown.stdout
