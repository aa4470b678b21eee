"""OpenAICompatClient against the scripted FakeModel, over real loopback sockets."""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator
from email.utils import formatdate

import pytest

import hermes
from hermes import tls
from hermes.models.client import ModelClient, OpenAICompatClient
from hermes.models.errors import (
    ContextLengthExceededError,
    ModelAuthError,
    ModelBadRequestError,
    ModelNotConfiguredError,
    ModelRateLimitError,
    ModelTimeoutError,
    ModelUnavailableError,
    ModelUnreachableError,
)
from hermes.models.retry import retry_delay, should_retry_status
from hermes.models.types import ToolCall, Usage
from hermes.testing.fake_model import (
    ContextLengthError,
    Error,
    FakeModel,
    Hang,
    Raw,
    Text,
    ToolCalls,
)

USER = [{"role": "user", "content": "x" * 40}]  # 40 chars -> the fake estimates 10 prompt tokens
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def fake() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


@pytest.fixture
async def client(fake: FakeModel) -> AsyncIterator[OpenAICompatClient]:
    c = OpenAICompatClient(base_url=fake.base_url, api_key=None, model="test-model", max_retries=3)
    yield c
    await c.aclose()


def test_client_satisfies_protocol() -> None:
    """Every method of the ModelClient contract exists on the client, async where it is."""
    import inspect

    c: ModelClient = OpenAICompatClient(base_url=None, api_key=None, model=None)
    for name, member in inspect.getmembers(ModelClient, inspect.isfunction):
        if name.startswith("_"):
            continue
        implemented = getattr(c, name, None)
        assert implemented is not None, name
        assert inspect.iscoroutinefunction(implemented) == inspect.iscoroutinefunction(member)


# ---------------------------------------------------------------------- text


async def test_plain_text(fake: FakeModel, client: OpenAICompatClient) -> None:
    fake.enqueue(Text("Hello there!", completion_tokens=3))

    result = await client.complete(USER, max_tokens=50, temperature=0.2)

    assert result.content == "Hello there!"
    assert result.tool_calls == []
    assert result.finish_reason == "stop"
    assert result.usage == Usage(prompt_tokens=10, completion_tokens=3, total_tokens=13)
    assert result.model == "test-model"
    (sent,) = fake.chat_requests()
    assert sent["model"] == "test-model"
    assert sent["messages"] == USER
    assert sent["max_tokens"] == 50
    assert sent["temperature"] == 0.2
    assert "stream" not in sent and "tools" not in sent
    assert fake.headers[0]["authorization"] == "Bearer not-needed"
    fake.assert_complete()


async def test_streaming_text_calls_on_delta_and_captures_usage(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    fake.enqueue(Text(text, chunk_chars=5))
    pieces: list[str] = []

    result = await client.complete(USER, on_delta=pieces.append)

    assert len(pieces) == 9  # ceil(44 / 5)
    assert "".join(pieces) == text
    assert result.content == text
    assert result.finish_reason == "stop"
    assert result.usage == Usage(prompt_tokens=10, completion_tokens=12, total_tokens=22)
    (sent,) = fake.chat_requests()
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    fake.assert_complete()


async def test_per_call_model_overrides_default(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    fake.enqueue(Text("ok"))
    result = await client.complete(USER, model="other-model")
    assert result.model == "other-model"
    assert fake.chat_requests()[0]["model"] == "other-model"


# ---------------------------------------------------------------------- tool calls


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_single_tool_call(fake: FakeModel, client: OpenAICompatClient, stream: bool) -> None:
    args = {"q": "weather in Paris tomorrow", "limit": 5}
    fake.enqueue(ToolCalls([("search", args)], chunk_chars=4))
    deltas: list[str] = []

    result = await client.complete(USER, tools=TOOLS, on_delta=deltas.append if stream else None)

    assert result.finish_reason == "tool_calls"
    assert result.content is None
    assert deltas == []
    assert result.tool_calls == [ToolCall(id="call_1", name="search", arguments=json.dumps(args))]
    assert json.loads(result.tool_calls[0].arguments) == args
    assert fake.chat_requests()[0]["tools"] == TOOLS
    fake.assert_complete()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_parallel_tool_calls(
    fake: FakeModel, client: OpenAICompatClient, stream: bool
) -> None:
    first = {"q": "population of Lyon", "nested": {"a": [1, 2, 3]}}
    second = {"path": "/tmp/notes.txt", "text": 'line one\nline two "quoted"'}
    fake.enqueue(
        ToolCalls(
            [("search", first), ("write_file", second)], content="Let me check.", chunk_chars=3
        )
    )
    deltas: list[str] = []

    result = await client.complete(USER, tools=TOOLS, on_delta=deltas.append if stream else None)

    assert result.content == "Let me check."
    if stream:
        assert "".join(deltas) == "Let me check."
    assert [(c.id, c.name) for c in result.tool_calls] == [
        ("call_1", "search"),
        ("call_2", "write_file"),
    ]
    assert [json.loads(c.arguments) for c in result.tool_calls] == [first, second]
    assert result.finish_reason == "tool_calls"
    assert result.usage is not None and result.usage.prompt_tokens == 10
    fake.assert_complete()


# ---------------------------------------------------------------------- retries and errors


async def test_retries_5xx_then_succeeds(fake: FakeModel, client: OpenAICompatClient) -> None:
    fake.enqueue(Error(500, retry_after_ms=1), Error(503, retry_after_ms=1), Text("finally"))

    result = await client.complete(USER)

    assert result.content == "finally"
    assert len(fake.chat_requests()) == 3
    fake.assert_complete()


async def test_streaming_request_is_retried_before_first_byte(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    fake.enqueue(Error(502, retry_after_ms=1), Text("streamed after retry"))
    pieces: list[str] = []

    result = await client.complete(USER, on_delta=pieces.append)

    assert "".join(pieces) == result.content == "streamed after retry"
    assert len(fake.chat_requests()) == 2
    fake.assert_complete()


async def test_rate_limit_exhausts_retries(fake: FakeModel) -> None:
    max_retries = 2
    fake.enqueue(*[Error(429, "Rate limit reached", retry_after_ms=1)] * (max_retries + 1))
    client = OpenAICompatClient(
        base_url=fake.base_url, api_key=None, model="m", max_retries=max_retries
    )
    try:
        with pytest.raises(ModelRateLimitError) as info:
            await client.complete(USER)
    finally:
        await client.aclose()

    assert info.value.status_code == 429
    assert "429" in str(info.value) and "Rate limit reached" in str(info.value)
    assert len(fake.chat_requests()) == max_retries + 1
    fake.assert_complete()


async def test_wrong_key_is_auth_error_without_the_key() -> None:
    secret = "sk-live-0123456789abcdefSECRET"
    with FakeModel(api_key="the-right-key") as fake:
        client = OpenAICompatClient(base_url=fake.base_url, api_key=secret, model="m")
        try:
            with pytest.raises(ModelAuthError) as info:
                await client.complete(USER)
        finally:
            await client.aclose()

        assert info.value.status_code == 401
        message = str(info.value)
        assert "401" in message
        assert secret not in message and "0123456789" not in message
        assert len(fake.requests) == 1  # 401 is not retried
        assert fake.headers[0]["authorization"] == f"Bearer {secret}"


async def test_right_key_is_sent() -> None:
    with FakeModel(api_key="k") as fake:
        fake.enqueue(Text("in"))
        client = OpenAICompatClient(base_url=fake.base_url, api_key="k", model="m")
        try:
            assert (await client.complete(USER)).content == "in"
        finally:
            await client.aclose()


async def test_context_length_error_is_typed_and_not_retried(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    fake.enqueue(ContextLengthError(limit=8192))

    with pytest.raises(ContextLengthExceededError) as info:
        await client.complete(USER)

    assert info.value.limit == 8192
    assert info.value.status_code == 400
    assert "400" in str(info.value)
    assert len(fake.chat_requests()) == 1
    fake.assert_complete()


@pytest.mark.parametrize(
    ("status", "message", "code", "limit"),
    [
        (400, "Requested tokens exceed context window of 16,384 tokens", None, 16384),
        (413, "prompt is too long: 210000 tokens > 200000 maximum", None, 200000),
        (400, "Input too long", "context_length_exceeded", None),
        (400, "the request exceeds the available context size, try increasing it", None, None),
    ],
)
async def test_context_length_variants(
    fake: FakeModel,
    client: OpenAICompatClient,
    status: int,
    message: str,
    code: str | None,
    limit: int | None,
) -> None:
    fake.enqueue(Error(status, message, code=code))

    with pytest.raises(ContextLengthExceededError) as info:
        await client.complete(USER)

    assert info.value.limit == limit
    assert info.value.status_code == status


async def test_other_4xx_is_bad_request(fake: FakeModel, client: OpenAICompatClient) -> None:
    fake.enqueue(Error(404, "The model `nope` does not exist", code="model_not_found"))

    with pytest.raises(ModelBadRequestError) as info:
        await client.complete(USER)

    assert info.value.status_code == 404
    assert "404" in str(info.value) and "does not exist" in str(info.value)
    assert len(fake.chat_requests()) == 1


async def test_5xx_after_retries_is_unavailable(fake: FakeModel) -> None:
    fake.enqueue(Error(500, "upstream exploded", retry_after_ms=1), Error(500, retry_after_ms=1))
    client = OpenAICompatClient(base_url=fake.base_url, api_key=None, model="m", max_retries=1)
    try:
        with pytest.raises(ModelUnavailableError) as info:
            await client.complete(USER)
    finally:
        await client.aclose()

    assert info.value.status_code == 500
    assert "500" in str(info.value)
    fake.assert_complete()


async def test_non_json_error_body(fake: FakeModel, client: OpenAICompatClient) -> None:
    fake.enqueue(Raw(400, "<html>Bad Gateway-ish</html>", "text/html"))

    with pytest.raises(ModelBadRequestError) as info:
        await client.complete(USER)

    assert "400" in str(info.value)


async def test_timeout_is_unavailable(fake: FakeModel) -> None:
    fake.enqueue(Hang(30))
    client = OpenAICompatClient(
        base_url=fake.base_url, api_key=None, model="m", timeout=0.3, max_retries=0
    )
    try:
        with pytest.raises(ModelUnavailableError) as info:
            await client.complete(USER)
    finally:
        await client.aclose()

    assert "did not answer within 0.3s" in str(info.value)
    assert isinstance(info.value, ModelTimeoutError)  # the server maps it by type (504)
    assert len(fake.chat_requests()) == 1
    # The fixture's stop() must interrupt the 30 s hang, or this test would be slow.


async def test_closed_port_is_unavailable() -> None:
    fake = FakeModel().start()
    fake.stop()
    client = OpenAICompatClient(
        base_url=fake.base_url, api_key=None, model="m", timeout=2.0, max_retries=0
    )
    try:
        with pytest.raises(ModelUnavailableError) as info:
            await client.complete(USER)
    finally:
        await client.aclose()

    assert "could not be reached" in str(info.value)
    assert isinstance(info.value, ModelUnreachableError)


@pytest.mark.parametrize("call", ["complete", "stream", "list_models"])
async def test_a_refused_connection_fails_fast_naming_the_url_and_the_fix(call: str) -> None:
    fake = FakeModel().start()
    fake.stop()  # nothing listens on that port now
    client = OpenAICompatClient(base_url=fake.base_url, api_key=None, model="m", max_retries=3)
    started = time.monotonic()
    try:
        with pytest.raises(ModelUnreachableError) as info:
            if call == "list_models":
                await client.list_models()
            else:
                await client.complete(USER, on_delta=(lambda _: None) if call == "stream" else None)
    finally:
        await client.aclose()
    # one quick retry, not the 0.5 + 1 + 2 s back-off a timeout or a 5xx gets
    assert time.monotonic() - started < 1.5
    message = str(info.value)
    assert fake.base_url in message and "(2 attempts)" in message
    assert "refused" in message and "`hermes doctor`" in message


@pytest.mark.parametrize(
    ("base_url", "model", "hint"),
    [(None, "m", "OPENAI_BASE_URL"), ("http://127.0.0.1:9/v1", None, "HERMES_MODEL")],
)
async def test_not_configured(base_url: str | None, model: str | None, hint: str) -> None:
    client = OpenAICompatClient(base_url=base_url, api_key=None, model=model)
    try:
        with pytest.raises(ModelNotConfiguredError) as info:
            await client.complete(USER)
    finally:
        await client.aclose()

    assert hint in str(info.value)


async def test_list_models_without_base_url() -> None:
    client = OpenAICompatClient(base_url=None, api_key=None, model=None)
    with pytest.raises(ModelNotConfiguredError):
        await client.list_models()
    await client.aclose()


# ---------------------------------------------------------------------- models


async def test_list_models_keeps_context_length(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    fake.context_length = 32768

    models = await client.list_models()

    assert [(m["id"], m["context_length"]) for m in models] == [("fake-model", 32768)]


async def test_list_models_without_context_length(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    fake.context_length = None
    (entry,) = await client.list_models()
    assert entry["id"] == "fake-model"
    assert "context_length" not in entry


# ---------------------------------------------------------------------- the fake itself


async def test_fake_when_predicate_and_default(fake: FakeModel, client: OpenAICompatClient) -> None:
    fake.enqueue(Text("for tools"), when=lambda body: "tools" in body)
    fake.enqueue(Text("plain"))
    fake.default = lambda body: Text(f"default for {body['model']}")

    assert (await client.complete(USER)).content == "plain"
    assert (await client.complete(USER, tools=TOOLS)).content == "for tools"
    assert (await client.complete(USER)).content == "default for test-model"
    assert len(fake.wait_for_requests(3, timeout=1.0)) == 3
    fake.assert_complete()


async def test_fake_exhausted_script_fails_assert_complete(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    fake.enqueue(Text("only one"))
    await client.complete(USER)

    with pytest.raises(ModelUnavailableError):
        await client.complete(USER)  # x-should-retry: false -> a single request

    assert len(fake.chat_requests()) == 2
    with pytest.raises(AssertionError, match="script exhausted"):
        fake.assert_complete()


def test_fake_unconsumed_script_fails_assert_complete() -> None:
    with FakeModel() as fake:
        fake.enqueue(Text("never asked for"))
        with pytest.raises(AssertionError, match="never requested"):
            fake.assert_complete()


# ---------------------------------------------------------------------- retry policy


async def test_retry_after_seconds_header_is_honoured(fake: FakeModel) -> None:
    fake.enqueue(
        Raw(429, '{"error": {"message": "slow down"}}', headers={"retry-after": "0.3"}),
        Text("after the wait"),
    )
    client = OpenAICompatClient(base_url=fake.base_url, api_key=None, model="m", max_retries=1)
    try:
        started = time.monotonic()
        result = await client.complete(USER)
        waited = time.monotonic() - started
    finally:
        await client.aclose()

    assert result.content == "after the wait"
    assert waited >= 0.3
    fake.assert_complete()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_should_retry_header_overrides_the_status(
    fake: FakeModel, client: OpenAICompatClient, stream: bool
) -> None:
    retry_400 = {"x-should-retry": "true", "retry-after-ms": "1"}
    fake.enqueue(Raw(400, '{"error": {"message": "try again"}}', headers=retry_400), Text("ok"))

    result = await client.complete(USER, on_delta=(lambda _: None) if stream else None)

    assert result.content == "ok"
    assert len(fake.chat_requests()) == 2


async def test_exhausted_retries_say_how_many_attempts(fake: FakeModel) -> None:
    fake.enqueue(*[Error(503, "overloaded", retry_after_ms=1)] * 3)
    client = OpenAICompatClient(base_url=fake.base_url, api_key=None, model="m", max_retries=2)
    try:
        with pytest.raises(ModelUnavailableError) as info:
            await client.complete(USER, on_delta=lambda _: None)
    finally:
        await client.aclose()

    assert "HTTP 503 (3 attempts)" in str(info.value) and "overloaded" in str(info.value)
    fake.assert_complete()


async def test_context_phrase_outside_the_message_is_recognised(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    body = '{"error": {"message": "invalid request", "type": "context_length_exceeded"}}'
    fake.enqueue(Raw(400, body))

    with pytest.raises(ContextLengthExceededError):
        await client.complete(USER)
    assert len(fake.chat_requests()) == 1


async def test_success_status_with_a_body_that_is_not_json(
    fake: FakeModel, client: OpenAICompatClient
) -> None:
    fake.enqueue(Raw(200, "<html>captive portal</html>", "text/html"))

    with pytest.raises(ModelUnavailableError, match="not JSON"):
        await client.complete(USER)


async def test_both_paths_send_the_same_identifying_headers(
    fake: FakeModel, client: OpenAICompatClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-from-the-environment")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-from-the-environment")
    fake.enqueue(Text("plain"), Text("streamed"))

    await client.complete(USER)
    await client.complete(USER, on_delta=lambda _: None)

    plain, streamed = fake.headers
    for headers in (plain, streamed):
        assert headers["user-agent"] == f"hermes/{hermes.__version__}"
        assert headers["authorization"] == "Bearer not-needed"
        assert headers["content-type"] == "application/json"
        assert "openai-organization" not in headers and "openai-project" not in headers


def test_retry_delay_follows_the_server_then_backs_off() -> None:
    assert retry_delay(0, {"retry-after-ms": "250"}) == 0.25
    assert retry_delay(3, {"retry-after": "2"}) == 2.0
    in_five = formatdate(time.time() + 5, usegmt=True)
    assert 3.5 <= retry_delay(0, {"retry-after": in_five}) <= 5.0
    for taken, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delay = retry_delay(taken, {"retry-after": "3600"})  # over a minute: ignored
        assert 0.75 * ceiling <= delay <= ceiling
    assert should_retry_status(429, {}) and should_retry_status(502, {})
    assert not should_retry_status(400, {}) and not should_retry_status(
        503, {"x-should-retry": "false"}
    )


@pytest.fixture
async def proxied(
    fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAICompatClient]:
    """A client for an unreachable host that HTTP_PROXY reaches (the fake doubles as a
    forwarding proxy: it sees the absolute URL)."""
    monkeypatch.setenv("HTTP_PROXY", fake.base_url.removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = OpenAICompatClient(
        base_url="http://model.invalid:9/v1", api_key=None, model="m", max_retries=0
    )
    yield client
    await client.aclose()


async def test_plain_completions_honour_the_proxy_environment(
    fake: FakeModel, proxied: OpenAICompatClient
) -> None:
    fake.enqueue(Text("via the proxy"))
    assert (await proxied.complete(USER)).content == "via the proxy"
    assert fake.records[-1].path == "/v1/chat/completions"
    assert fake.headers[-1]["host"] == "model.invalid:9"


async def test_streamed_completions_through_a_proxy_take_the_sdk(
    fake: FakeModel, proxied: OpenAICompatClient
) -> None:
    """Behind a proxy a streamed call goes through the openai SDK (plain-HTTP endpoints
    without one stream over Hermes' own connections), with the same answer."""
    fake.enqueue(Text("streamed via the proxy"))
    client = proxied
    deltas: list[str] = []
    result = await client.complete(USER, on_delta=deltas.append)
    assert result.content == "".join(deltas) == "streamed via the proxy"
    assert client._sdk is not None  # the SDK carried it
    assert fake.headers[-1]["host"] == "model.invalid:9"


async def test_a_stream_that_breaks_off_says_so() -> None:
    """Upstream sends one chunk, then drops the connection: a typed error naming what happened."""
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "partial "}, "finish_reason": None}],
    }

    async def breaks_off(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Content-Length: 100000\r\n\r\ndata: " + json.dumps(chunk).encode() + b"\n\n"
        )
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.transport.abort()

    server = await asyncio.start_server(breaks_off, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = OpenAICompatClient(
        base_url=f"http://127.0.0.1:{port}/v1", api_key=None, model="m", max_retries=3
    )
    pieces: list[str] = []
    try:
        with pytest.raises(ModelUnavailableError, match="stopped mid-answer: the connection broke"):
            await client.complete(USER, on_delta=pieces.append)
    finally:
        await client.aclose()
        server.close()
    assert pieces == ["partial "]  # what arrived was passed on, and nothing was replayed


@pytest.fixture
def tls_loads(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """The threads the SDK's TLS context is built in (a CA bundle loaded), as they happen."""
    loaded_in: list[threading.Thread] = []

    @functools.cache  # as the real one: built once, then handed out
    def context() -> ssl.SSLContext:
        loaded_in.append(threading.current_thread())
        return ssl.create_default_context()

    monkeypatch.setattr(tls, "openai_context", context)
    return loaded_in


async def test_warm_up_loads_the_tls_context_off_the_event_loop(
    tls_loads: list[threading.Thread],
) -> None:
    """The warm-up runs while the server already answers: loading a CA bundle on the loop
    would hold every request arriving meanwhile."""
    client = OpenAICompatClient(base_url="https://127.0.0.1:9/v1", api_key=None, model="m")
    try:
        await client.warm_up()
    finally:
        await client.aclose()
    assert len(tls_loads) == 1 and tls_loads[0] is not threading.main_thread()


async def test_warm_up_loads_nothing_for_a_plain_http_endpoint(
    fake: FakeModel, client: OpenAICompatClient, tls_loads: list[threading.Thread]
) -> None:
    """Our own connections carry every call to it: no SDK client, no TLS context."""
    await client.warm_up()
    fake.enqueue(Text("warm"), Text("streamed"))
    assert (await client.complete(USER)).content == "warm"
    assert (await client.complete(USER, on_delta=lambda _t: None)).content == "streamed"
    assert tls_loads == [] and client._sdk is None
