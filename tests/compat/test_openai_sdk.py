"""The openai SDK: sync, async, streaming through Hermes' tool progress, `.parse`, tools,
`responses`, and the error types a wrong key maps to."""

from __future__ import annotations

import json

import openai
import pytest
from pydantic import BaseModel

from hermes.testing.fake_model import Text, ToolCalls
from tests.compat.conftest import WEATHER_SCHEMA, Hermes

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": WEATHER_SCHEMA,
    },
}


class City(BaseModel):
    name: str
    country: str


def test_sync_chat_with_session_header(hermes: Hermes) -> None:
    hermes.fake.enqueue(Text("Noted, Alex."), Text("Go."))
    client = openai.OpenAI(base_url=hermes.base_url, api_key="hermes")
    hermes.closing(client)
    session = {"X-Hermes-Session-Id": "compat-openai-1"}
    first = client.chat.completions.create(
        model="hermes", messages=[{"role": "user", "content": "I use Go."}], extra_headers=session
    )
    assert first.choices[0].message.content == "Noted, Alex."
    second = client.chat.completions.create(
        model="hermes",
        messages=[{"role": "user", "content": "Which language?"}],
        extra_headers=session,
        temperature=0.3,
        seed=1,
    )
    assert second.choices[0].message.content == "Go."
    sent = hermes.fake.chat_requests()[1]
    assert [m["content"] for m in sent["messages"] if m["role"] == "user"] == [
        "I use Go.",
        "Which language?",
    ]
    assert (sent["temperature"], sent["seed"]) == (0.3, 1)


async def test_async_streaming_plain_loop_through_tool_progress(hermes: Hermes) -> None:
    hermes.fake.enqueue(ToolCalls([("add", {"a": 2, "b": 2})]), Text("four", chunk_chars=1))
    client = openai.AsyncOpenAI(base_url=hermes.base_url, api_key="hermes")
    stream = await client.chat.completions.create(
        model="hermes", messages=[{"role": "user", "content": "2+2"}], stream=True
    )
    text = ""
    async for chunk in stream:  # the loop every tutorial shows
        text += chunk.choices[0].delta.content or ""
    await client.close()
    assert text == "four"


def test_parse_structured_output(hermes: Hermes) -> None:
    hermes.fake.enqueue(Text('{"name": "Lyon", "country": "France"}'))
    client = openai.OpenAI(base_url=hermes.base_url, api_key="hermes")
    hermes.closing(client)
    r = client.chat.completions.parse(
        model="hermes",
        messages=[{"role": "user", "content": "A French city"}],
        response_format=City,
    )
    assert r.choices[0].message.parsed == City(name="Lyon", country="France")
    fmt = hermes.fake.chat_requests()[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "City"


def test_client_tool_round_trip(hermes: Hermes) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]), Text("Rain in Oslo."))
    client = openai.OpenAI(base_url=hermes.base_url, api_key="hermes")
    hermes.closing(client)
    messages: list = [{"role": "user", "content": "Oslo?"}]
    r = client.chat.completions.create(model="hermes", messages=messages, tools=[WEATHER_TOOL])
    assert r.choices[0].finish_reason == "tool_calls"
    call = r.choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"city": "Oslo"}
    messages += [r.choices[0].message, {"role": "tool", "tool_call_id": call.id, "content": "rain"}]
    r = client.chat.completions.create(model="hermes", messages=messages, tools=[WEATHER_TOOL])
    assert r.choices[0].message.content == "Rain in Oslo."


def test_responses_create_and_chain(hermes: Hermes) -> None:
    hermes.fake.enqueue(Text("Hello."), Text("Again."))
    client = openai.OpenAI(base_url=hermes.base_url, api_key="hermes")
    hermes.closing(client)
    first = client.responses.create(model="hermes", input="hi", instructions="Be brief.")
    second = client.responses.create(model="hermes", input="again", previous_response_id=first.id)
    assert (first.output_text, second.output_text) == ("Hello.", "Again.")
    assert len([m for m in hermes.fake.chat_requests()[1]["messages"] if m["role"] == "user"]) == 2


def test_unknown_parameter_is_a_bad_request(hermes: Hermes) -> None:
    client = openai.OpenAI(base_url=hermes.base_url, api_key="hermes")
    hermes.closing(client)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="hermes", messages=[{"role": "user", "content": "x"}], extra_body={"frob": 1}
        )
    assert "frob" in str(info.value)
