"""Health, models, auth, the error envelope on every kind of failure, and user-scope headers."""

from __future__ import annotations

import httpx
import pytest
from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from hermes import tls
from hermes.config.settings import Settings
from hermes.plugins import Daemon
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from hermes.server.deps import get_scope, require_auth
from hermes.server.errors import APIError
from hermes.store.base import NewMessage
from hermes.testing.fake_model import FakeModel

from .conftest import AUTH, SERVER_KEY, Api, open_api


def assert_envelope(
    r: httpx.Response, status: int, code: str | None = None, param: str | None = None
) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["error"]
    assert set(error) == {"message", "type", "code", "param"}
    assert error["message"] and "Traceback" not in error["message"]
    if code is not None:
        assert error["code"] == code
    if param is not None:
        assert error["param"] == param
    return error


async def test_health_needs_no_auth_and_shows_no_internals(keyed_api: Api) -> None:
    """Anonymous /health: alive, version, model configured; no paths, no parts (SPEC §13)."""
    r = await keyed_api.client.get("/health", headers={"Authorization": ""})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"status", "version", "model_configured"}
    assert body["status"] == "ok" and body["model_configured"] is True
    assert str(keyed_api.runtime.settings.home) not in r.text
    assert r.headers["x-content-type-options"] == "nosniff"


async def test_detailed_health_is_behind_the_key_and_reports_the_store(keyed_api: Api) -> None:
    anonymous = await keyed_api.client.get("/health/detailed", headers={"Authorization": ""})
    assert_envelope(anonymous, 401, "invalid_api_key")
    r = await keyed_api.client.get("/health/detailed")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ok" and body["store"]["ok"] is True
    assert body["store"]["journal_mode"] == "wal"
    assert {"model", "disk", "notes", "cron"} <= set(body["parts"])
    assert isinstance(body["uptime"], int) and 0 <= body["uptime"] < 600


async def test_detailed_health_follows_open_auth_without_a_server_key(api: Api) -> None:
    for headers in ({}, {"Authorization": "Bearer anything"}):
        r = await api.client.get("/health/detailed", headers=headers)
        assert r.status_code == 200 and r.json()["store"]["ok"] is True


async def test_health_reports_a_broken_store_as_503(settings: Settings) -> None:
    async with open_api(settings) as api:
        api.runtime.store.close()
        r = await api.client.get("/health/detailed")
        assert r.status_code == 503 and r.json()["status"] == "degraded"
        assert r.json()["store"]["ok"] is False
        alive = await api.client.get("/health")  # the process still serves (SPEC §1)
        assert alive.status_code == 200 and alive.json()["status"] == "ok"


async def test_health_stays_cheap_and_still_sees_an_index_out_of_step(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FTS5's own index check takes the write lock for seconds at a million messages (and
    PRAGMA quick_check reads the whole file): those are for `hermes doctor`. A probe of
    /health compares the index's rows with the messages, and reports the file's check as
    last run in the background."""
    from hermes.store.search_index import SQLiteSearch

    def deep_check(self: object) -> None:
        raise AssertionError("/health ran the deep index check")

    monkeypatch.setattr(SQLiteSearch, "check_search_index", deep_check)
    monkeypatch.setattr("hermes.server.meta.HEALTH_CACHE_SECONDS", 0.0)
    async with open_api(settings) as api:
        r = await api.client.get("/health/detailed")
        assert r.status_code == 200, r.text
        assert r.json()["store"]["integrity"] == "ok"
        assert r.json()["store"]["search_index"] == "ok"
        store = api.runtime.store
        store.ensure_session("default", "s", source="api")
        store.append_messages("default", "s", [NewMessage("user", "the blue kettle")])
        r = await api.client.get("/health/detailed")  # waiting for the index is not out of step
        assert r.status_code == 200 and r.json()["store"]["search_index"] == "ok"
        store.search.catch_up()  # type: ignore[attr-defined]
        store.connection.execute(  # type: ignore[attr-defined]
            "INSERT INTO message_exact_fts (rowid, content, tag) VALUES (999, 'ghost', 'x')"
        )
        r = await api.client.get("/health/detailed")
        assert r.status_code == 503 and r.json()["status"] == "degraded"
        detail = r.json()["store"]["search_index"]
        assert "message_exact_fts holds 2 rows" in detail and "hermes sessions reindex" in detail


async def test_models_lists_the_advertised_model(api: Api) -> None:
    r = await api.client.get("/v1/models")
    assert r.status_code == 200
    data = r.json()["data"]
    assert [m["id"] for m in data] == ["hermes"] and data[0]["object"] == "model"
    assert (await api.client.get("/v1/models/hermes")).json()["id"] == "hermes"
    assert_envelope(await api.client.get("/v1/models/gpt-4"), 404, "model_not_found", "model")


async def test_auth_rejects_missing_and_wrong_keys_in_the_envelope(keyed_api: Api) -> None:
    client = keyed_api.client
    for headers in (
        {"Authorization": ""},
        {"Authorization": "Bearer wrong"},
        {"Authorization": SERVER_KEY},
        {"Authorization": f"Basic {SERVER_KEY}"},
        {"Authorization": f"Bearer {SERVER_KEY}x"},
    ):
        r = await client.get("/v1/models", headers=headers)
        assert_envelope(r, 401, "invalid_api_key")
        assert SERVER_KEY not in r.text
        r = await client.post("/v1/chat/completions", json={}, headers=headers)
        # the type OpenAI uses, which clients map to their AuthenticationError
        assert assert_envelope(r, 401, "invalid_api_key")["type"] == "authentication_error"
    assert (await client.get("/v1/models", headers=AUTH)).status_code == 200
    lower = {"Authorization": f"bearer {SERVER_KEY}"}
    assert (await client.get("/v1/models", headers=lower)).status_code == 200


async def test_without_a_server_key_any_bearer_or_none_is_accepted(api: Api) -> None:
    assert (await api.client.get("/v1/models")).status_code == 200
    r = await api.client.get("/v1/models", headers={"Authorization": "Bearer hermes"})
    assert r.status_code == 200


async def test_unknown_route_and_method_use_the_envelope(api: Api) -> None:
    assert_envelope(await api.client.get("/v1/nothing"), 404, "not_found")
    assert_envelope(await api.client.get("/v1/chat/completions"), 405, "method_not_allowed")
    assert_envelope(await api.client.delete("/health"), 405)


class _Item(BaseModel):
    name: str = Field(max_length=5)
    count: int


def _extra_router() -> APIRouter:
    router = APIRouter(dependencies=[Depends(require_auth)])

    @router.post("/test/items")
    async def create(item: _Item, scope: str = Depends(get_scope)) -> dict:
        return {"scope": scope, "name": item.name}

    @router.get("/test/crash")
    async def crash() -> dict:
        raise RuntimeError("secret internals /etc/passwd")

    @router.get("/test/teapot")
    async def teapot() -> dict:
        raise APIError(418, "I am a teapot.", code="teapot", param="cup")

    return router


async def test_routers_of_other_parts_share_validation_auth_and_500_envelopes(
    keyed_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(build_runtime(keyed_settings), routers=[_extra_router()])
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(),
            transport=httpx.ASGITransport(app),
            base_url="http://t",
            headers=AUTH,
        ) as client:
            r = await client.post("/test/items", json={"name": "toolong", "count": 1})
            error = assert_envelope(r, 400, "invalid_value", "name")
            assert "5" in error["message"]
            r = await client.post("/test/items", json={"name": "ok"})
            assert_envelope(r, 400, param="count")
            r = await client.post(
                "/test/items", content=b"{nope", headers={"content-type": "application/json"}
            )
            assert_envelope(r, 400, "invalid_json")
            r = await client.post(
                "/test/items", json={"name": "ok", "count": 2}, headers={"X-Hermes-User-Id": "ann"}
            )
            assert r.json() == {"scope": "user:ann", "name": "ok"}
            r = await client.get("/test/crash")
            error = assert_envelope(r, 500, "internal_error")
            assert error["type"] == "server_error" and "passwd" not in r.text
            assert_envelope(await client.get("/test/teapot"), 418, "teapot", "cup")
            r = await client.post(
                "/test/items",
                json={"name": "x", "count": 1},
                headers={"Authorization": "Bearer no"},
            )
            assert_envelope(r, 401, "invalid_api_key")
    assert any("secret internals" in rec.getMessage() or rec.exc_info for rec in caplog.records)


async def test_daemons_start_in_order_and_stop_in_reverse(settings: Settings) -> None:
    events: list[str] = []

    def daemon(name: str) -> Daemon:
        async def start() -> None:
            events.append(f"start {name}")

        async def stop() -> None:
            events.append(f"stop {name}")

        return Daemon(name, start, stop)

    runtime = build_runtime(settings)
    app = create_app(runtime, daemons=[daemon("a"), daemon("b")])
    async with app.router.lifespan_context(app):
        assert events == ["start a", "start b"]
    assert events == ["start a", "start b", "stop b", "stop a"]
    # the runtime closed last: its store refuses work now
    assert runtime.store.health()["ok"] is False


# ---------------------------------------------------------------------- X-Hermes-User-Id


async def test_user_header_needs_a_server_key(api: Api, fake: FakeModel) -> None:
    r = await api.chat("hi", headers={"X-Hermes-User-Id": "ann"})
    assert_envelope(r, 403, "user_scope_requires_key", "X-Hermes-User-Id")
    assert fake.chat_requests() == []


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("ann\tbob", "control"),
        ("a" * 257, "257"),
        ("ann smith", "may only use"),
        ("ann\u00e9", "outside ASCII"),
        ("", "empty"),
    ],
)
async def test_user_header_rules(
    keyed_api: Api, fake: FakeModel, value: str, fragment: str
) -> None:
    raw = [(b"x-hermes-user-id", value.encode("latin-1"))]
    r = await keyed_api.client.post(
        "/v1/chat/completions", json={"messages": []}, headers=httpx.Headers(raw)
    )
    error = assert_envelope(r, 400, "invalid_user_id", "X-Hermes-User-Id")
    assert fragment in error["message"]
    assert fake.chat_requests() == []


async def test_user_header_at_the_length_bound_is_accepted(keyed_api: Api, fake: FakeModel) -> None:
    from hermes.testing.fake_model import Text

    fake.enqueue(Text("ok"))
    user = "u" * 256
    r = await keyed_api.chat("hi", headers={"X-Hermes-User-Id": user, "X-Hermes-Session-Id": "s"})
    assert r.status_code == 200
    assert [m.content for m in keyed_api.runtime.store.get_messages(f"user:{user}", "s")] == [
        "hi",
        "ok",
    ]
