"""litellm, by recorded requests: it pins an older openai SDK than Hermes, so it cannot be
installed next to it. These are the bodies `litellm.completion(model="openai/hermes",
api_base=..., ...)` sends through its OpenAI provider, and the fields its response and error
mapping read (it raises AuthenticationError for a 401 whose type is `authentication_error`,
and BadRequestError for an `invalid_request_error`)."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from hermes import tls
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, ToolCalls
from tests.compat.conftest import Hermes
from tests.server.conftest import open_api

# litellm.completion(model="openai/hermes", messages=..., temperature=0.2, max_tokens=64,
# tools=[...], tool_choice="auto", stream=True, stream_options={"include_usage": True})
RECORDED_STREAM = {
    "model": "hermes",
    "messages": [{"role": "user", "content": "Oslo?"}],
    "temperature": 0.2,
    "max_tokens": 64,
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ],
    "tool_choice": "auto",
    "stream": True,
    "stream_options": {"include_usage": True},
    "extra_body": None,
}


def test_recorded_streaming_tool_request(hermes: Hermes) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]))
    body = {k: v for k, v in RECORDED_STREAM.items() if v is not None}
    with httpx.Client(verify=tls.httpx_context(), base_url=hermes.base_url, timeout=10) as client:
        r = client.post("/chat/completions", json=body, headers={"Authorization": "Bearer sk-x"})
    assert r.status_code == 200
    frames = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    assert '"finish_reason": "tool_calls"' in r.text and '"get_weather"' in r.text
    sent = hermes.fake.chat_requests()[0]
    assert (sent["temperature"], sent["max_tokens"], sent["tool_choice"]) == (0.2, 64, "auto")


async def test_wrong_key_maps_to_authentication_error(settings: Settings, fake: FakeModel) -> None:
    settings.server.api_key = SecretStr("k" * 32)
    async with open_api(settings) as api:
        r = await api.client.post(
            "/v1/chat/completions",
            json={"model": "hermes", "messages": [{"role": "user", "content": "x"}]},
            headers={"Authorization": "Bearer wrong"},
        )
    assert r.status_code == 401
    assert r.json()["error"]["type"] == "authentication_error"
    assert fake.chat_requests() == []
