"""Issue 33: a refused request is not an exception. Bad input answered 4xx leaves at most an
INFO/WARNING line in the server log, never a traceback or an ERROR."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hermes import tls
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel

from .conftest import AUTH, chat_body, open_api, open_socket_api

BAD_JSON = b'{"model": "hermes", "messages": [}'
MALFORMED = [  # requests no HTTP client library would send; uvicorn answers them itself
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
    b"GET /health HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
]


def _requests() -> list[tuple[str, str, dict[str, Any]]]:
    chat = "/v1/chat/completions"
    json_headers = {"content-type": "application/json", **AUTH}
    return [
        ("POST", chat, {"content": BAD_JSON, "headers": json_headers}),
        ("POST", chat, {"content": b"\xff\xfe not utf-8", "headers": json_headers}),
        ("POST", chat, {"content": b"[" * 100_000 + b"]" * 100_000, "headers": json_headers}),
        ("POST", "/v1/responses", {"content": BAD_JSON, "headers": json_headers}),
        ("POST", "/api/jobs", {"content": BAD_JSON, "headers": json_headers}),
        ("POST", "/api/jobs", {"json": {"name": 5, "bogus": 1}, "headers": AUTH}),
        ("POST", chat, {"json": chat_body(model="gpt-9-ultra"), "headers": AUTH}),
        ("POST", "/v1/responses", {"json": {"model": "nope", "input": "hi"}, "headers": AUTH}),
        ("GET", "/v1/models/gpt-9-ultra", {"headers": AUTH}),
        ("POST", chat, {"json": chat_body(), "headers": {"Authorization": "Bearer wrong"}}),
        ("GET", "/health/detailed", {"headers": {}}),
        ("POST", chat, {"json": chat_body(), "headers": {**AUTH, "X-Hermes-Session-Id": "a b"}}),
        (
            "POST",
            chat,
            {"json": chat_body(), "headers": {**AUTH, "X-Hermes-Session-Id": "x" * 300}},
        ),
        (
            "POST",
            chat,
            {"json": chat_body(), "headers": {**AUTH, "X-Hermes-Session-Id": "café".encode()}},
        ),
        ("POST", chat, {"json": chat_body(), "headers": {**AUTH, "X-Hermes-User-Id": "bad id"}}),
        ("POST", chat, {"json": chat_body(), "headers": {**AUTH, "Idempotency-Key": ""}}),
        ("POST", chat, {"content": b"{}", "headers": {**json_headers, "content-length": "abc"}}),
        ("POST", chat, {"content": b"x" * 2_000, "headers": json_headers}),  # over the limit
        ("POST", chat, {"json": {"messages": [{"role": "user", "content": 5}]}, "headers": AUTH}),
        ("POST", chat, {"json": chat_body(temperature=9), "headers": AUTH}),
        ("POST", chat, {"json": chat_body(tools=[{"type": "web"}]), "headers": AUTH}),
        ("GET", "/v1/responses/resp_missing", {"headers": AUTH}),
        ("GET", "/api/jobs/nope", {"headers": AUTH}),
        ("DELETE", "/health", {}),
        ("GET", "/nowhere", {}),
    ]


async def test_refused_requests_log_no_traceback_and_no_error(
    keyed_settings: Settings, fake: FakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    keyed_settings.server.max_body_bytes = 1_000
    caplog.set_level(logging.DEBUG)
    statuses = []
    async with open_api(keyed_settings) as api:
        caplog.clear()
        for method, path, kwargs in _requests():
            r = await api.client.request(method, path, **kwargs)
            statuses.append((path, r.status_code))
            assert 400 <= r.status_code < 500, (method, path, r.text)
            assert r.json()["error"]["code"], r.text
        records = [r for r in caplog.records if r.name.startswith(("hermes", "uvicorn", "fastapi"))]
    assert fake.chat_requests() == []
    noisy = [r for r in records if r.exc_info or r.levelno >= logging.ERROR]
    assert noisy == [], [(r.name, r.levelname, r.getMessage()) for r in noisy]
    assert len(records) <= len(statuses), [r.getMessage() for r in records]


async def test_refusals_on_a_real_socket_log_no_traceback(
    keyed_settings: Settings, fake: FakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    """The same batch through uvicorn (streamed variants and oversized bodies included)."""

    keyed_settings.server.max_body_bytes = 1_000
    keyed_settings.server.body_timeout = 0.3
    caplog.set_level(logging.DEBUG)
    uvicorn_log = logging.getLogger("uvicorn")  # does not propagate to the root logger
    uvicorn_log.addHandler(caplog.handler)
    try:
        async with open_socket_api(keyed_settings) as (base, _):
            await _send_batch(base, caplog)
    finally:
        uvicorn_log.removeHandler(caplog.handler)
    records = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore", "asyncio"))]
    assert fake.chat_requests() == []
    noisy = [r for r in records if r.exc_info or r.levelno >= logging.ERROR]
    assert noisy == [], [(r.name, r.levelname, r.getMessage()) for r in noisy]


async def _send_batch(base: str, caplog: pytest.LogCaptureFixture) -> None:
    import httpx

    if True:
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, timeout=10
        ) as client:
            caplog.clear()
            for method, path, kwargs in _requests():
                if "content-length" in kwargs.get("headers", {}):
                    continue  # httpx refuses to send a malformed Content-Length
                r = await client.request(method, path, **kwargs)
                assert 400 <= r.status_code < 500, (method, path, r.text)
                idempotent = "Idempotency-Key" in kwargs.get("headers", {})
                if path.endswith("completions") and "json" in kwargs and not idempotent:
                    streamed = {**kwargs["json"], "stream": True}
                    r = await client.request(method, path, **{**kwargs, "json": streamed})
                    assert 400 <= r.status_code < 500, (method, path, r.text)

            async def chunked() -> AsyncIterator[bytes]:  # over the limit, no Content-Length
                for _ in range(10):
                    yield b"x" * 500

            r = await client.post("/v1/chat/completions", content=chunked(), headers=AUTH)
            assert r.status_code == 413, r.text
        port = int(base.rsplit(":", 1)[1])
        # a body that stops arriving: 408 after server.body_timeout
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: "
                + AUTH["Authorization"].encode()
                + b"\r\nContent-Length: 100\r\n\r\n{"
            )
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(200), 5)
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 408"), answer
        for raw in MALFORMED:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(raw)
                await writer.drain()
                answer = await asyncio.wait_for(reader.read(200), 5)
            finally:
                writer.close()
            assert answer.startswith(b"HTTP/1.1 4"), (raw, answer)


@pytest.mark.parametrize(
    "header", ["X-Hermes-Session-Id", "X-Hermes-Session-Key", "X-Hermes-User-Id"]
)
async def test_a_non_ascii_id_is_refused_by_header_name_never_echoed(
    keyed_settings: Settings, fake: FakeModel, header: str
) -> None:
    """`café` sent as UTF-8 bytes arrives latin-1-decoded as `cafÃ©`: a 400 that names the
    header, with neither spelling in the answer's body or headers."""
    async with open_api(keyed_settings) as api:
        r = await api.client.post(
            "/v1/chat/completions", json=chat_body(), headers={**AUTH, header: "café".encode()}
        )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == header and header in error["message"]
    assert error["code"] in ("invalid_session_id", "invalid_user_id")
    # a random hex id (x-request-id) may hold "caf" by chance: it echoes nothing
    echoing = [v for v in r.headers.values() if not re.fullmatch(r"[0-9a-f-]+", v)]
    for spelling in ("café", "cafÃ©", "caf"):
        assert spelling not in r.text
        assert all(spelling not in value for value in echoing)
    assert fake.chat_requests() == []
