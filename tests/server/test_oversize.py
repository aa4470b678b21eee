"""Issue 33: oversized input is refused with a JSON error that reaches the client, and a
message that cannot fit the context window is refused before any model call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from hermes import tls
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel

from .conftest import chat_body, open_api, open_socket_api
from .test_basics import assert_envelope


async def test_a_message_larger_than_the_context_window_never_reaches_the_model(
    settings: Settings, fake: FakeModel
) -> None:
    settings.model.context_length = 32_000
    settings.server.max_body_bytes = 4_000_000
    async with open_api(settings) as api:
        for stream in (False, True):
            r = await api.chat("x" * 2_000_000, stream=stream)
            error = assert_envelope(r, 400, "context_length_exceeded", "messages")
            assert (
                "about 500,004 tokens" in error["message"] and "32,000 tokens" in error["message"]
            )
        r = await api.client.post(
            "/v1/responses", json={"model": "hermes", "input": "x" * 2_000_000}
        )
        assert_envelope(r, 400, "context_length_exceeded")
    assert fake.requests == []


@pytest.mark.parametrize("size", [11_000_000, 30_000_000])
async def test_an_oversized_body_gets_a_413_not_a_reset(settings: Settings, size: int) -> None:
    """Answering before the body is read made uvicorn close a socket with unread data in it:
    the kernel then resets the connection and the client never sees the 413."""
    body = b'{"messages": "' + b"x" * size + b'"}'
    async with open_socket_api(settings) as (base, _):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, timeout=30
        ) as client:
            for _ in range(3):
                r = await client.post(
                    "/v1/chat/completions",
                    content=body,
                    headers={"content-type": "application/json"},
                )
                error = assert_envelope(r, 413, "request_too_large")
                assert "10,000,000 bytes" in error["message"]

            # chunked (no Content-Length): refused as the bytes arrive
            async def pieces() -> AsyncIterator[bytes]:
                for i in range(0, len(body), 65536):
                    yield body[i : i + 65536]

            r = await client.post("/v1/chat/completions", content=pieces())
            assert_envelope(r, 413, "request_too_large")
            ok = await client.post("/v1/chat/completions", json=chat_body("hi"))
            assert ok.status_code in (200, 502, 503)
