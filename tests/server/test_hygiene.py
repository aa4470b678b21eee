"""Idempotency-Key, request-body limits (declared and chunked), CORS."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from hermes.config.settings import Settings
from hermes.testing.fake_model import Error, FakeModel, Hang, Text

from .conftest import AUTH, Api, chat_body, open_api, open_socket_api
from .test_basics import assert_envelope

# ---------------------------------------------------------------------- idempotency


async def test_retried_request_gets_the_first_answer_without_a_second_turn(
    api: Api, fake: FakeModel
) -> None:
    fake.enqueue(Text("first answer"))
    headers = {"Idempotency-Key": "req-1", "X-Hermes-Session-Id": "idem"}
    r1 = await api.chat("hi", headers=headers)
    r2 = await api.chat("hi", headers=headers)
    assert r1.status_code == r2.status_code == 200
    assert r2.json() == r1.json() and r2.headers["idempotency-replayed"] == "true"
    assert "idempotency-replayed" not in r1.headers
    assert r2.headers["x-hermes-session-id"] == "idem"
    assert len(fake.chat_requests()) == 1
    assert len(api.runtime.store.get_messages("default", "idem")) == 2
    fake.assert_complete()


async def test_concurrent_duplicates_share_one_computation(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Hang(0.2, then=Text("shared")))
    headers = {"Idempotency-Key": "dup"}
    results = await asyncio.gather(*(api.chat("hi", headers=headers) for _ in range(5)))
    assert {r.json()["choices"][0]["message"]["content"] for r in results} == {"shared"}
    assert len({r.json()["id"] for r in results}) == 1
    assert len(fake.chat_requests()) == 1
    assert sum(1 for r in results if "idempotency-replayed" not in r.headers) == 1


async def test_same_key_with_a_different_request_is_409(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("a"))
    assert (await api.chat("one", headers={"Idempotency-Key": "k"})).status_code == 200
    assert_envelope(
        await api.chat("two", headers={"Idempotency-Key": "k"}),
        409,
        "idempotency_key_conflict",
        "Idempotency-Key",
    )
    r = await api.chat("one", headers={"Idempotency-Key": "k", "X-Hermes-Session-Id": "other"})
    assert_envelope(r, 409, "idempotency_key_conflict")
    assert len(fake.chat_requests()) == 1


async def test_failures_are_not_remembered(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Error(500, "down"), Text("works now"))
    headers = {"Idempotency-Key": "retry-me", "X-Hermes-Session-Id": "f"}
    assert (await api.chat("hi", headers=headers)).status_code == 502
    r = await api.chat("hi", headers=headers)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "works now"
    assert [m.content for m in api.runtime.store.get_messages("default", "f")] == [
        "hi",
        "works now",
    ]


@pytest.mark.parametrize("key", ["", "has space", "x" * 256, "tab\tkey"])
async def test_bad_idempotency_keys_are_400(api: Api, fake: FakeModel, key: str) -> None:
    r = await api.chat("hi", headers={"Idempotency-Key": key})
    assert_envelope(r, 400, "invalid_idempotency_key", "Idempotency-Key")
    assert fake.chat_requests() == []


# ---------------------------------------------------------------------- body limits


@pytest.fixture
def small_body_settings(settings: Settings) -> Settings:
    settings.server.max_body_bytes = 2_000
    return settings


async def test_declared_body_over_the_limit_is_413(
    small_body_settings: Settings, fake: FakeModel
) -> None:
    async with open_api(small_body_settings) as api:
        error = assert_envelope(await api.chat("x" * 3_000), 413, "request_too_large")
        assert "2,000" in error["message"]
        fake.enqueue(Text("fine"))
        assert (await api.chat("x" * 1_000)).status_code == 200
    assert len(fake.chat_requests()) == 1


async def test_chunked_body_without_length_over_the_limit_is_413(
    small_body_settings: Settings, fake: FakeModel
) -> None:
    async def body():
        for _ in range(10):
            yield b"x" * 500

    async with open_api(small_body_settings) as api:
        r = await api.client.post("/v1/chat/completions", content=body())
        assert "content-length" not in r.request.headers
        assert_envelope(r, 413, "request_too_large")
    assert fake.chat_requests() == []


async def test_chunked_body_over_the_limit_on_a_real_socket(
    small_body_settings: Settings, fake: FakeModel
) -> None:
    async with open_socket_api(small_body_settings) as (base, _):
        port = int(base.rsplit(":", 1)[1])
        response = await asyncio.to_thread(_raw_chunked_post, port, 5, 1_000)
    assert response.startswith(b"HTTP/1.1 413")
    assert b'"request_too_large"' in response
    assert fake.chat_requests() == []


def _raw_chunked_post(port: int, chunks: int, size: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        try:
            for _ in range(chunks):
                sock.sendall(b"%x\r\n%s\r\n" % (size, b"x" * size))
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server may answer and close before we finish sending
        data = b""
        while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
        return data


async def test_bad_content_length_is_400(api: Api) -> None:
    r = await api.client.post(
        "/v1/chat/completions", content=b"{}", headers={"Content-Length": "abc"}
    )
    assert_envelope(r, 400, "invalid_content_length")


# ---------------------------------------------------------------------- CORS


async def test_cors_is_off_by_default(api: Api) -> None:
    r = await api.client.get("/v1/models", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    r = await api.client.options(
        "/v1/chat/completions",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert r.status_code == 405 and "access-control-allow-origin" not in r.headers


async def test_cors_allows_only_configured_origins(keyed_settings: Settings) -> None:
    keyed_settings.server.cors_origins = ["https://app.example"]
    async with open_api(keyed_settings) as api:
        r = await api.client.options(
            "/v1/chat/completions",
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, x-hermes-session-id, content-type",
            },
        )
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        assert "x-hermes-session-id" in r.headers["access-control-allow-headers"].lower()
        r = await api.client.get("/v1/models", headers={"Origin": "https://app.example", **AUTH})
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        assert "x-hermes-session-id" in r.headers["access-control-expose-headers"].lower()
        r = await api.client.options(
            "/v1/chat/completions",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        assert r.status_code == 400 and "access-control-allow-origin" not in r.headers
        r = await api.client.get("/v1/models", headers={"Origin": "https://evil.example", **AUTH})
        assert "access-control-allow-origin" not in r.headers


async def test_streaming_requests_ignore_idempotency_keys(
    settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Text("one"), Text("two"))
    async with open_api(settings) as api:
        for expected in ("one", "two"):
            r = await api.client.post(
                "/v1/chat/completions",
                json=chat_body("hi", stream=True),
                headers={"Idempotency-Key": "s"},
            )
            assert expected in r.text
    assert len(fake.chat_requests()) == 2


async def test_security_headers_on_errors_too(api: Api) -> None:
    r = await api.client.get("/nope")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert isinstance(r, httpx.Response)
