"""Upstream chaos: garbage, cut connections and stalls are classified the same on both paths,
and a broken answer leaves nothing stored."""

from __future__ import annotations

import time

import pytest

from hermes.config.settings import Settings
from hermes.models.client import OpenAICompatClient
from hermes.models.errors import ModelUnavailableError
from hermes.testing.fake_model import Drop, FakeModel, Hang, Raw, Response, Text
from tests.server.conftest import open_api

HTML = Raw(200, "<html><body>Please log in</body></html>", "text/html")
BAD_SSE = Raw(200, "data: {not json\n\n", "text/event-stream")
EMPTY_SSE = Raw(200, ": keep-alive\n\n", "text/event-stream")


def _client(fake: FakeModel, **kw: float) -> OpenAICompatClient:
    return OpenAICompatClient(
        base_url=fake.base_url,
        api_key=None,
        model="m",
        timeout=kw.get("timeout", 5),
        max_retries=int(kw.get("retries", 0)),
        total_timeout=kw.get("total"),
    )


@pytest.mark.parametrize(
    ("response", "stream", "says"),
    [
        (HTML, True, "text/html instead of an event stream"),
        (HTML, False, "not JSON"),
        (BAD_SSE, True, "malformed stream event"),
        (EMPTY_SSE, True, "held no completion chunks"),
        (Drop(), True, "could not be reached"),
        (Drop(), False, "could not be reached"),
    ],
)
async def test_broken_answers_are_upstream_errors(
    fake: FakeModel, response: Response, stream: bool, says: str
) -> None:
    fake.enqueue(response)
    async with _client(fake) as client:
        with pytest.raises(ModelUnavailableError, match=says):
            await client.complete(
                [{"role": "user", "content": "hi"}], on_delta=(lambda _t: None) if stream else None
            )


async def test_total_wait_is_bounded_across_retries(fake: FakeModel) -> None:
    fake.enqueue(Hang(30), Hang(30), Hang(30))
    started = time.monotonic()
    async with _client(fake, timeout=60, retries=3, total=0.5) as client:
        with pytest.raises(ModelUnavailableError, match="did not answer within 0.5s in total"):
            await client.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("response", [HTML, BAD_SSE, Drop()])
async def test_a_broken_stream_stores_nothing(
    settings: Settings, fake: FakeModel, response: Response
) -> None:
    fake.enqueue(response)
    async with open_api(settings) as api:
        r = await api.client.post(
            "/v1/chat/completions",
            json={
                "model": "hermes",
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
            headers={"X-Hermes-Session-Id": "broken"},
        )
        assert r.status_code in (502, 503, 504), r.text
        assert r.json()["error"]["type"] == "server_error"
        assert api.runtime.store.get_messages("default", "broken") == []


async def test_a_good_stream_still_works(settings: Settings, fake: FakeModel) -> None:
    fake.enqueue(Text("all fine"))
    async with open_api(settings) as api:
        r = await api.client.post(
            "/v1/chat/completions",
            json={
                "model": "hermes",
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
        )
    assert r.status_code == 200 and "all fine" in r.text.replace('"', "")


@pytest.mark.parametrize(
    ("response", "status", "says"),
    [
        (Drop(), 503, "could not be reached"),
        (HTML, 502, "cannot read"),
        (BAD_SSE, 502, "cannot read"),
    ],
)
async def test_stream_failures_map_like_plain_ones(
    settings: Settings, fake: FakeModel, response: Response, status: int, says: str
) -> None:
    fake.enqueue(response)
    async with open_api(settings) as api:
        r = await api.client.post(
            "/v1/chat/completions",
            json={
                "model": "hermes",
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
        )
    assert r.status_code == status and says in r.json()["error"]["message"], r.text
