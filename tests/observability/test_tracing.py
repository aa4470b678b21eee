"""OpenTelemetry traces (issue 43): the span tree of a turn from the SDK's in-memory
exporter, nothing of a user's identity or words in it unless asked, and one real export
over OTLP/HTTP to a loopback receiver decoded with opentelemetry-proto."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hermes.config.settings import Settings
from hermes.observability import tracing
from hermes.observability.otel import Tracing, traces_url
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

from ..server.conftest import AUTH, TEST_TOOLS, open_api

SECRET_WORDS = "my passport number is X1234567"
ALICE = {**AUTH, "X-Hermes-User-Id": "alice", "X-Hermes-Session-Id": "user:alice/chat"}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    tracing.install(Tracing(memory, batch=False))
    yield memory
    tracing.reset()


def _tree(spans: tuple[ReadableSpan, ...]) -> dict[str, list[str]]:
    by_id = {s.context.span_id: s for s in spans}
    children: dict[str, list[str]] = {}
    for s in spans:
        parent = by_id.get(s.parent.span_id) if s.parent is not None else None
        children.setdefault(parent.name if parent else "<root>", []).append(s.name)
    return {k: sorted(v) for k, v in children.items()}


def _everything(spans: tuple[ReadableSpan, ...]) -> str:
    return " ".join(f"{s.name} {dict(s.attributes or {})} {s.events}" for s in spans)


async def _tool_turn(keyed_settings: Settings, fake: FakeModel) -> None:
    fake.enqueue(
        ToolCalls([("add", {"a": 2, "b": 3})], prompt_tokens=50, completion_tokens=5),
        Text("5, and noted", prompt_tokens=70, completion_tokens=4),
    )
    async with open_api(keyed_settings, tools=TEST_TOOLS) as api:
        r = await api.chat(SECRET_WORDS, headers=ALICE)
        assert r.status_code == 200


async def test_turn_span_tree_and_no_content(
    keyed_settings: Settings, fake: FakeModel, exporter: InMemorySpanExporter
) -> None:
    await _tool_turn(keyed_settings, fake)
    spans = exporter.get_finished_spans()
    tree = _tree(spans)
    assert tree["<root>"] == ["hermes.turn"]
    assert tree["hermes.turn"] == [
        "hermes.context",
        "hermes.model.call",
        "hermes.model.call",
        "hermes.tool",
    ]
    turn = next(s for s in spans if s.name == "hermes.turn")
    attrs = dict(turn.attributes or {})
    assert attrs["hermes.scope.hash"] == tracing.scope_hash("user:alice")
    assert attrs["hermes.platform"] == "api"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (120, 9)
    calls = [s for s in spans if s.name == "hermes.model.call"]
    assert {dict(c.attributes or {})["gen_ai.request.model"] for c in calls} == {"fake-model"}
    assert sorted(dict(c.attributes or {})["gen_ai.usage.input_tokens"] for c in calls) == [50, 70]
    tool = next(s for s in spans if s.name == "hermes.tool")
    # an end user is not offered `add` (tools.end_user_toolsets): the call fails, still traced
    assert dict(tool.attributes or {}) == {"hermes.tool.name": "add", "hermes.tool.ok": False}
    seen = _everything(spans)
    for leak in ("alice", "X1234567", "passport", "noted", '"a": 2'):
        assert leak not in seen


async def test_capture_content_puts_the_words_in(keyed_settings: Settings, fake: FakeModel) -> None:
    memory = InMemorySpanExporter()
    tracing.install(Tracing(memory, batch=False), capture_content=True)
    await _tool_turn(keyed_settings, fake)
    spans = memory.get_finished_spans()
    turn = next(s for s in spans if s.name == "hermes.turn")
    assert dict(turn.attributes or {})["hermes.turn.input"] == SECRET_WORDS
    assert dict(turn.attributes or {})["hermes.turn.output"] == "5, and noted"
    tool = next(s for s in spans if s.name == "hermes.tool")
    assert '"a": 2' in str(dict(tool.attributes or {})["hermes.tool.arguments"])
    assert "alice" not in _everything(spans)  # the scope stays hashed even then


async def test_off_by_default_costs_a_no_op(keyed_settings: Settings, fake: FakeModel) -> None:
    assert keyed_settings.observability.otlp_endpoint is None
    fake.default = Text("ok")
    async with open_api(keyed_settings) as api:
        assert (await api.chat("hi", headers=AUTH)).status_code == 200
    assert not tracing.enabled()
    assert tracing.span("x") is tracing.NO_SPAN


class _Receiver(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.server.received.append(request)  # type: ignore[attr-defined]
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_real_otlp_http_export(
    keyed_settings: Settings, fake: FakeModel, receiver: ThreadingHTTPServer
) -> None:
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    assert traces_url(endpoint) == endpoint + "/v1/traces"
    keyed_settings.observability.otlp_endpoint = endpoint
    fake.default = Text("ok")
    async with open_api(keyed_settings) as api:  # the agent turns tracing on from settings
        assert tracing.enabled()
        assert (await api.chat("hi", headers=ALICE)).status_code == 200
    await asyncio.to_thread(tracing.flush)
    received: list[ExportTraceServiceRequest] = receiver.received  # type: ignore[attr-defined]
    spans = [
        span
        for request in received
        for resource in request.resource_spans
        for scoped in resource.scope_spans
        for span in scoped.spans
    ]
    names = sorted({s.name for s in spans})
    assert {"hermes.turn", "hermes.context", "hermes.model.call"} <= set(names)
    service = {
        a.key: a.value.string_value for a in received[0].resource_spans[0].resource.attributes
    }
    assert service["service.name"] == "hermes"
    turn = next(s for s in spans if s.name == "hermes.turn")
    attrs = {a.key: a.value for a in turn.attributes}
    assert attrs["hermes.scope.hash"].string_value == tracing.scope_hash("user:alice")
