"""/v1/responses through the openai SDK: text, instructions, stored chains, conversations,
function tools (paused and resumed), streaming events, structured output and scopes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.server.conftest import AUTH, TEST_TOOLS, Api, open_api, open_socket_api
from tests.server.test_basics import assert_envelope

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with open_api(settings, tools=TEST_TOOLS) as a:
        yield a


def sdk(api: Api) -> openai.AsyncOpenAI:
    """The openai SDK on the app in-process (httpx's ASGI transport)."""
    http = httpx.AsyncClient(transport=httpx.ASGITransport(api.app))
    return openai.AsyncOpenAI(
        base_url="http://hermes.test/v1", api_key="hermes", http_client=http, max_retries=0
    )


def roles(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in messages if m["role"] != "system"]


async def test_text_turns_chain_through_previous_response_id(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("Hi Alex."), Text("You are Alex."))
    client = sdk(api)
    first = await client.responses.create(
        model="hermes", input="I am Alex.", instructions="Answer in three words."
    )
    assert first.output_text == "Hi Alex." and first.status == "completed"
    assert first.usage is not None and first.usage.total_tokens > 0
    second = await client.responses.create(
        model="hermes", input="Who am I?", previous_response_id=first.id
    )
    assert second.output_text == "You are Alex."
    one, two = fake.chat_requests()
    assert {"role": "system", "content": "Answer in three words."} in one["messages"]
    assert roles(two["messages"]) == [
        ("user", "I am Alex."),
        ("assistant", "Hi Alex."),
        ("user", "Who am I?"),
    ]
    fetched = await client.responses.retrieve(first.id)
    assert fetched.output_text == "Hi Alex." and fetched.id == first.id
    # the chain is one Hermes session, visible like any other
    session = first.id.replace("resp_", "resp-")
    assert len(api.runtime.store.get_messages("default", session)) == 4
    await client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(first.id)


async def test_conversation_and_session_header_name_the_session(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("one"), Text("two"))
    client = sdk(api)
    await client.responses.create(model="hermes", input="a", conversation="conv-7")
    await client.responses.create(
        model="hermes", input="b", extra_headers={"X-Hermes-Session-Id": "conv-7"}
    )
    stored = api.runtime.store.get_messages("default", "conv-7")
    assert [m.content for m in stored] == ["a", "one", "b", "two"]


async def test_store_false_is_stateless_and_not_retrievable(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("Paris."))
    client = sdk(api)
    items: Any = [
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Which country again?"},
        {"role": "user", "content": [{"type": "input_text", "text": "France."}]},
    ]
    r = await client.responses.create(model="hermes", input=items, store=False)
    assert r.output_text == "Paris."
    assert roles(fake.chat_requests()[0]["messages"]) == [
        ("user", "Capital of France?"),
        ("assistant", "Which country again?"),
        ("user", "France."),
    ]
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(r.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.create(model="hermes", input="x", previous_response_id=r.id)


async def test_function_tools_pause_and_resume_by_previous_response_id(
    api: Api, fake: FakeModel
) -> None:
    fake.enqueue(
        ToolCalls([("add", {"a": 1, "b": 1})]),
        ToolCalls([("get_weather", {"city": "Oslo"})]),
        Text("Rainy."),
    )
    client = sdk(api)
    r = await client.responses.create(
        model="hermes", input="Oslo weather?", tools=[WEATHER], tool_choice="required"
    )
    calls = [item for item in r.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]
    assert '"add"' not in r.model_dump_json()  # Hermes' own step stays server-side
    offered = fake.chat_requests()[0]
    assert offered["tool_choice"] == "required"
    assert offered["tools"][-1]["function"]["name"] == "get_weather"
    assert offered["tools"][-1]["function"]["strict"] is True
    done = await client.responses.create(
        model="hermes",
        previous_response_id=r.id,
        input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "rain"}],
        tools=[WEATHER],
    )
    assert done.output_text == "Rainy."
    last = fake.chat_requests()[-1]["messages"]
    assert last[-1] == {"role": "tool", "tool_call_id": calls[0].call_id, "content": "rain"}


async def test_stateless_function_round_trip_from_input_items(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("Sunny."))
    client = sdk(api)
    items: Any = [
        {"role": "user", "content": "Rome?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sun"},
    ]
    r = await client.responses.create(model="hermes", input=items, tools=[WEATHER], store=False)
    assert r.output_text == "Sunny."
    sent = fake.chat_requests()[0]["messages"][-2:]
    assert sent[0]["tool_calls"][0]["id"] == "c1" and sent[1]["role"] == "tool"


class City(BaseModel):
    name: str
    country: str


async def test_parse_sends_the_schema_and_options(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text('{"name": "Lyon", "country": "France"}'))
    client = sdk(api)
    r = await client.responses.parse(
        model="hermes",
        input="A French city",
        text_format=City,
        temperature=0.1,
        max_output_tokens=200,
        reasoning={"effort": "low"},
    )
    assert r.output_parsed == City(name="Lyon", country="France")
    request = fake.chat_requests()[0]
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"]["properties"]["name"]
    assert (request["temperature"], request["max_tokens"]) == (0.1, 200)
    assert request["reasoning_effort"] == "low"


async def test_bad_requests_are_400s(api: Api, fake: FakeModel) -> None:
    post = api.client.post
    assert_envelope(await post("/v1/responses", json={"model": "h"}), 400, param="input")
    r = await post("/v1/responses", json={"input": "x", "frobnicate": 1})
    assert_envelope(r, 400, "unknown_parameter", "frobnicate")
    r = await post("/v1/responses", json={"input": "x", "tools": [{"type": "web_search"}]})
    assert_envelope(r, 400, "unsupported_tool_type")
    r = await post("/v1/responses", json={"input": "x", "background": True})
    assert_envelope(r, 400, "unsupported_parameter", "background")
    both = {"input": "x", "previous_response_id": "resp_1", "conversation": "c"}
    assert_envelope(await post("/v1/responses", json=both), 400, param="conversation")
    r = await post("/v1/responses", json={"input": [{"type": "item_reference", "id": "x"}]})
    assert_envelope(r, 400, "unsupported_input_item")
    assert fake.chat_requests() == []


async def test_stored_responses_belong_to_their_user(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Text("secret answer"))
    async with open_api(keyed_settings) as api:
        alice = {**AUTH, "X-Hermes-User-Id": "alice"}
        bob = {**AUTH, "X-Hermes-User-Id": "bob"}
        r = await api.client.post("/v1/responses", json={"input": "hi"}, headers=alice)
        rid = r.json()["id"]
        assert (await api.client.get(f"/v1/responses/{rid}", headers=alice)).status_code == 200
        assert_envelope(await api.client.get(f"/v1/responses/{rid}", headers=bob), 404)
        follow = {"input": "more", "previous_response_id": rid}
        assert_envelope(await api.client.post("/v1/responses", json=follow, headers=bob), 404)


async def test_streaming_events_through_the_sdk(settings: Settings, fake: FakeModel) -> None:
    fake.enqueue(
        ToolCalls([("add", {"a": 1, "b": 2})]),
        Text("The answer is 3.", chunk_chars=4),
        ToolCalls([("get_weather", {"city": "Lima"})], content="Checking."),
    )
    async with open_socket_api(settings, tools=TEST_TOOLS) as (base, _):
        client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="hermes", max_retries=0)
        try:
            async with client.responses.stream(model="hermes", input="1+2?") as stream:
                deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
                final = await stream.get_final_response()
            assert "".join(deltas) == "The answer is 3." and final.output_text == "The answer is 3."
            stream2 = await client.responses.create(
                model="hermes",
                input="Lima?",
                tools=[WEATHER],
                stream=True,  # type: ignore[list-item]
            )
            kinds, completed = [], None
            async for event in stream2:
                kinds.append(event.type)
                if event.type == "response.completed":
                    completed = event.response
            assert kinds[:2] == ["response.created", "response.in_progress"]
            assert "response.function_call_arguments.done" in kinds
            assert kinds[-1] == "response.completed" and completed is not None
            assert [i.type for i in completed.output] == ["message", "function_call"]
        finally:
            await client.close()


async def test_responses_stored_by_an_older_version_are_kept(
    api: Api, fake: FakeModel, settings: Settings
) -> None:
    """An upgrade finds `responses.db` (one file per home, before responses moved into the
    store): its responses are copied in on first use and the file is set aside."""
    import json
    import sqlite3

    legacy = settings.home / "responses.db"
    conn = sqlite3.connect(legacy)
    conn.execute(
        "CREATE TABLE responses (scope TEXT NOT NULL, id TEXT NOT NULL, session_id TEXT, "
        "created_at REAL NOT NULL, body TEXT NOT NULL, PRIMARY KEY (scope, id))"
    )
    body = {"id": "resp_old", "object": "response", "output": []}
    conn.execute(
        "INSERT INTO responses VALUES ('default', 'resp_old', 'old-session', 1.0, ?)",
        (json.dumps(body),),
    )
    conn.commit()
    conn.close()
    got = await api.client.get("/v1/responses/resp_old", headers=AUTH)
    assert got.status_code == 200 and got.json()["id"] == "resp_old"
    assert not legacy.exists() and (settings.home / "responses.db.imported").exists()
