"""Hostile request bodies: a 400 naming the field, before any model call, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Raw, Text
from tests.server.conftest import AUTH, Api

SURROGATE = '"a\\ud800b"'


def _raw_chat(content_json: str, **extra: Any) -> bytes:
    body = '{"model": "hermes", "messages": [{"role": "user", "content": %s}]%s}'
    more = "".join(f', "{k}": {json.dumps(v)}' for k, v in extra.items())
    return (body % (content_json, more)).encode()


async def _post_raw(api: Api, path: str, raw: bytes, **headers: str) -> Any:
    return await api.client.post(
        path, content=raw, headers={"content-type": "application/json", **headers}
    )


async def test_lone_surrogate_in_chat_is_a_400_before_the_model(api: Api, fake: FakeModel) -> None:
    r = await _post_raw(api, "/v1/chat/completions", _raw_chat(SURROGATE))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "messages[0].content"
    raw = (
        b'{"model":"hermes","messages":[{"role":"system","content":[{"type":"text",'
        b'"text":"x\\udfffy"}]},{"role":"user","content":"hi"}]}'
    )
    r = await _post_raw(api, "/v1/chat/completions", raw)
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages[0].content[0].text"
    assert fake.chat_requests() == []


async def test_a_valid_surrogate_pair_is_fine(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("ok"))
    r = await _post_raw(api, "/v1/chat/completions", _raw_chat('"smile \\ud83d\\ude00"'))
    assert r.status_code == 200, r.text


async def test_a_model_reply_with_a_lone_surrogate_is_cleaned(api: Api, fake: FakeModel) -> None:
    reply = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "PLACEHOLDER"},
            }
        ],
    }
    body = json.dumps(reply).replace("PLACEHOLDER", "broken \\ud800 reply")
    fake.enqueue(Raw(200, body))
    r = await api.client.post(
        "/v1/chat/completions",
        json={"model": "hermes", "messages": [{"role": "user", "content": "hi"}]},
        headers={"X-Hermes-Session-Id": "s"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "broken \ufffd reply"
    stored = api.runtime.store.get_messages("default", "s")
    assert [m.content for m in stored] == ["hi", "broken \ufffd reply"]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/jobs"])
async def test_deeply_nested_json_is_a_400(api: Api, path: str) -> None:
    raw = ("[" * 100_000 + "]" * 100_000).encode()
    r = await _post_raw(api, path, raw)
    assert r.status_code == 400, r.text
    nested = (
        '{"model":"hermes","messages":[{"role":"user","content":"hi"}],"metadata":'
        + "[" * 5000
        + "]" * 5000
        + "}"
    ).encode()
    r = await _post_raw(api, "/v1/chat/completions", nested)
    assert r.status_code == 400, r.text


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 2.5),
        ("temperature", -0.1),
        ("temperature", "hot"),
        ("top_p", 1.5),
        ("frequency_penalty", 3),
        ("presence_penalty", -2.5),
        ("max_tokens", 0),
        ("max_tokens", 1.5),
        ("max_completion_tokens", -1),
        ("seed", "x"),
        ("stop", ["a", "b", "c", "d", "e"]),
        ("logit_bias", {"1": 101}),
        ("reasoning_effort", "extreme"),
        ("temperature", True),
    ],
)
async def test_out_of_range_sampling_options_are_a_400(
    api: Api, fake: FakeModel, field: str, value: Any
) -> None:
    r = await api.chat("hi", **{field: value})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == field
    assert fake.chat_requests() == []


async def test_in_range_sampling_options_pass(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("ok"))
    r = await api.chat("hi", temperature=2, top_p=0, max_tokens=5, seed=1, stop=["x"])
    assert r.status_code == 200, r.text


@pytest.fixture
async def jobs_api(keyed_settings: Settings) -> Any:
    from tests.server.conftest import open_api

    keyed_settings.cron.max_jobs = 2
    async with open_api(keyed_settings) as a:
        a.client.headers.update(AUTH)
        yield a


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"name": "n\\ud800", "schedule": "every 1h", "prompt": "p"}', "name"),
        (b'{"name": "n", "schedule": "every 1h", "prompt": "p\\udc00"}', "prompt"),
        (b'{"name": "n", "schedule": "every 1h", "prompt": "p", "deliver": "\\ud800"}', "deliver"),
        (b'{"name": "n", "schedule": "in 999999999999m", "prompt": "p"}', "schedule"),
        (b'{"name": "n", "schedule": "every 9999999999999999m", "prompt": "p"}', "schedule"),
        (b'{"name": "n", "schedule": "1-0 * * * *", "prompt": "p"}', "schedule"),
        (b'{"name": "n", "schedule": "9999-12-31T23:59-05:00", "prompt": "p"}', "schedule"),
    ],
)
async def test_bad_jobs_are_a_400_naming_the_field(jobs_api: Api, raw: bytes, param: str) -> None:
    r = await _post_raw(jobs_api, "/api/jobs", raw)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


async def test_jobs_per_scope_are_capped(jobs_api: Api) -> None:
    body = {"name": "n", "schedule": "every 1h", "prompt": "p"}
    for i in range(2):
        job = {**body, "name": f"n{i}"}
        assert (await jobs_api.client.post("/api/jobs", json=job)).status_code == 201
    r = await jobs_api.client.post("/api/jobs", json=body)
    assert r.status_code == 429 and r.json()["error"]["code"] == "job_limit_reached"
    other = await jobs_api.client.post("/api/jobs", json=body, headers={"X-Hermes-User-Id": "bob"})
    assert other.status_code == 201  # the cap is per scope
    patched = await jobs_api.client.get("/api/jobs")
    job_id = patched.json()["jobs"][0]["id"]
    r = await _post_raw(jobs_api, f"/api/jobs/{job_id}", b'{"name": "x\\ud800"}')
    assert r.status_code in (400, 405)
