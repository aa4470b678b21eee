"""The turn routes' fast lane (`hermes.server.fast_lane`) answers exactly as the full stack.

Each case sends the same request twice to one app, through the lane and with the lane off
(`app.fast_lane = False`: FastAPI's and Starlette's whole stack), and compares what a client
sees: status, every header in order, and the body, with only the values that differ between
any two turns (completion and response ids, timestamps, new session ids) masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from hermes.config.settings import Settings
from hermes.plugins import load_registry
from hermes.profiles import create
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from hermes.server.fast_lane import HermesApp
from hermes.server.profiles import ProfileRouter
from hermes.testing.fake_model import FakeModel, Text

from .conftest import chat_body

KEY = "lane-key-0123456789abcdef"
ALPHA_KEY = "alpha-key-0123456789abcdef"
ORIGIN = "https://app.example"
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MAX_BODY = 20_000

Send = Callable[[], Any]
_VOLATILE_KEYS = {"id", "created", "created_at", "response_id", "item_id", "previous_response_id"}
_VOLATILE_HEADERS = {b"x-hermes-session-id"}
_IDS = re.compile(r"\b(chatcmpl|resp|msg|rs|fc|call)_[A-Za-z0-9]+")


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "*" if k in _VOLATILE_KEYS else _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return value


def _body(r: httpx.Response) -> Any:
    if r.headers.get("content-type", "").startswith("application/json"):
        return _mask(r.json())
    lines = []
    for line in r.text.split("\n"):
        if line.startswith("data: {"):
            line = "data: " + json.dumps(_mask(json.loads(line[6:])))
        lines.append(_IDS.sub(r"\1_*", line))
    return lines


def seen(r: httpx.Response) -> tuple[int, list[tuple[bytes, bytes]], Any]:
    """What a client sees, with the values that differ between any two turns masked."""
    headers = [
        (name, b"*" if name in _VOLATILE_HEADERS else value)
        for name, value in r.headers.raw
        if name.lower() != b"content-length" or "json" in r.headers.get("content-type", "")
    ]
    return r.status_code, headers, _body(r)


@pytest.fixture
def lane_settings(settings: Settings) -> Settings:
    settings.server.api_key = SecretStr(KEY)
    settings.server.cors_origins = [ORIGIN]
    settings.server.max_body_bytes = MAX_BODY
    return settings


@pytest.fixture
async def app(lane_settings: Settings) -> AsyncIterator[HermesApp]:
    registry = load_registry()
    registry.prompt_block(lambda settings: _crash_on_request)
    app = create_app(build_runtime(lane_settings, registry=registry))
    assert isinstance(app, HermesApp)
    async with app.router.lifespan_context(app):
        yield app


def _crash_on_request(ctx: Any) -> str | None:
    """A plugin's prompt block with a bug that shows only for one message."""
    if ctx.user_message == "crash please":
        raise RuntimeError("a plugin bug; /etc/passwd")
    return None


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app),
        base_url="http://hermes.test",
        headers={"X-Request-Id": "lane-test-1"},
    )


async def both(app: HermesApp, send: Callable[[httpx.AsyncClient], Any]) -> httpx.Response:
    """`send` through the lane and through the full stack; the two answers must match."""
    async with client_for(app) as client:
        app.fast_lane = True
        through_lane = await send(client)
        app.fast_lane = False
        through_stack = await send(client)
        app.fast_lane = True
    assert seen(through_lane) == seen(through_stack)
    return through_lane


def auth(**more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}", **more}


async def test_a_completion_is_the_same_through_the_lane(app: HermesApp, fake: FakeModel) -> None:
    fake.default = Text("Hello!", prompt_tokens=40, completion_tokens=2)
    r = await both(app, lambda c: c.post(CHAT, json=chat_body("hi"), headers=auth()))
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "Hello!"
    assert r.headers["x-request-id"] == "lane-test-1"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert set(app.lane_paths()) == {CHAT, RESPONSES}  # the lane was there to be taken
    session = {"X-Hermes-Session-Id": "lane-session"}
    r = await both(app, lambda c: c.post(CHAT, json=chat_body("again"), headers=auth(**session)))
    assert r.headers["x-hermes-session-id"] == "lane-session"


async def test_a_stream_is_the_same_through_the_lane(app: HermesApp, fake: FakeModel) -> None:
    fake.default = Text("Hello there!")
    body = chat_body("hi", stream=True, stream_options={"include_usage": True})
    r = await both(app, lambda c: c.post(CHAT, json=body, headers=auth()))
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.text.rstrip().endswith("data: [DONE]")


async def test_responses_are_the_same_through_the_lane(app: HermesApp, fake: FakeModel) -> None:
    fake.default = Text("Bonjour")
    body = {"model": "hermes", "input": "hi"}
    r = await both(app, lambda c: c.post(RESPONSES, json=body, headers=auth()))
    assert r.status_code == 200 and "Bonjour" in r.text
    stream = {**body, "stream": True}
    r = await both(app, lambda c: c.post(RESPONSES, json=stream, headers=auth()))
    assert "event: response.completed" in r.text


@pytest.mark.parametrize(
    ("status", "code", "request_"),
    [
        (401, "invalid_api_key", {"json": chat_body("hi")}),
        (400, "invalid_json", {"content": b"{nope", "headers": auth()}),
        (404, "model_not_found", {"json": chat_body("hi", model="gpt-9"), "headers": auth()}),
        (413, "request_too_large", {"content": b"x" * (MAX_BODY + 1), "headers": auth()}),
        (
            400,
            "invalid_content_length",
            {"content": b"{}", "headers": auth(**{"Content-Length": "x"})},
        ),
    ],
)
async def test_refusals_are_the_same_through_the_lane(
    app: HermesApp, status: int, code: str, request_: dict[str, Any]
) -> None:
    r = await both(app, lambda c: c.post(CHAT, **request_))
    assert r.status_code == status, r.text
    assert r.json()["error"]["code"] == code


async def test_a_chunked_body_over_the_limit_is_the_same_through_the_lane(app: HermesApp) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b"x" * (MAX_BODY // 4)

    r = await both(app, lambda c: c.post(CHAT, content=chunks(), headers=auth()))
    assert r.status_code == 413


async def test_a_crash_is_the_same_500_envelope_through_the_lane(
    app: HermesApp, fake: FakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    fake.default = Text("never sent")
    body = chat_body("crash please")
    r = await both(app, lambda c: c.post(CHAT, json=body, headers=auth()))
    assert r.status_code == 500
    assert r.json()["error"]["code"] == "internal_error" and "passwd" not in r.text
    assert "a plugin bug" in caplog.text  # the operator's log has it


async def test_cors_is_the_same_through_the_lane(app: HermesApp, fake: FakeModel) -> None:
    fake.default = Text("ok")
    preflight = {
        "Origin": ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    r = await both(app, lambda c: c.options(CHAT, headers=preflight))
    assert r.headers["access-control-allow-origin"] == ORIGIN
    r = await both(app, lambda c: c.post(CHAT, json=chat_body("hi"), headers=auth(Origin=ORIGIN)))
    assert r.headers["access-control-allow-origin"] == ORIGIN
    assert "x-hermes-session-id" in r.headers["access-control-expose-headers"].lower()
    other = auth(Origin="https://evil.example")
    r = await both(app, lambda c: c.post(CHAT, json=chat_body("hi"), headers=other))
    assert "access-control-allow-origin" not in r.headers


async def test_other_methods_and_paths_still_go_through_the_router(app: HermesApp) -> None:
    r = await both(app, lambda c: c.get(CHAT, headers=auth()))
    assert r.status_code == 405
    r = await both(app, lambda c: c.post(CHAT + "/", json=chat_body("hi"), headers=auth()))
    assert r.status_code in (307, 404)


async def test_the_metrics_label_the_lane_routes_by_template(
    app: HermesApp, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    async with client_for(app) as client:
        for _ in range(3):
            assert (
                await client.post(CHAT, json=chat_body("hi"), headers=auth())
            ).status_code == 200
        await client.post(CHAT, json=chat_body("hi"))  # 401
        await client.post(RESPONSES, json={"model": "hermes", "input": "hi"}, headers=auth())
        text = (await client.get("/metrics", headers=auth())).text
    assert (
        'hermes_http_requests_total{method="POST",route="/v1/chat/completions",status="200"} 3.0'
        in text
    )
    assert (
        'hermes_http_requests_total{method="POST",route="/v1/chat/completions",status="401"} 1.0'
        in text
    )
    assert (
        'hermes_http_requests_total{method="POST",route="/v1/responses",status="200"} 1.0' in text
    )
    assert app.lane_paths()


async def test_profile_paths_take_the_lane(
    lane_settings: Settings, home: Path, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    alpha = create(home, "alpha").home
    (alpha / ".env").write_text(f"HERMES_API_KEY={ALPHA_KEY}\n", encoding="utf-8")
    built: list[Any] = []

    def build(settings: Settings) -> Any:
        built.append(create_app(build_runtime(settings)))
        return built[-1]

    app = create_app(build_runtime(lane_settings))
    router = ProfileRouter(home, app, lane_settings, build)
    async with app.router.lifespan_context(app):
        async with client_for(router) as client:
            app.fast_lane = True
            via_lane = await client.post(f"/p/default{CHAT}", json=chat_body("hi"), headers=auth())
            app.fast_lane = False
            via_stack = await client.post(f"/p/default{CHAT}", json=chat_body("hi"), headers=auth())
            assert seen(via_lane) == seen(via_stack) and via_lane.status_code == 200
            bearer = {"Authorization": f"Bearer {ALPHA_KEY}"}
            r = await client.post(f"/p/alpha{CHAT}", json=chat_body("hi"), headers=bearer)
            assert r.status_code == 200, r.text
            names = [n for n, _ in seen(via_lane)[1] if n != b"vary"]  # alpha: no CORS
            assert [n for n, _ in seen(r)[1]] == names
            assert built[0].lane_paths()
            refused = await client.post(f"/p/alpha{CHAT}", json=chat_body("hi"), headers=auth())
            assert refused.status_code == 401
        await router.close()
