"""JSON logs and request ids (issue 43, SPEC §17): every line logged during a turn carries
request_id, run_id and session_id; X-Request-Id is honoured and echoed; secrets are masked."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from hermes.agent.memory_providers import MemoryLayers, MemoryProvider
from hermes.config.settings import Settings
from hermes.observability import logs
from hermes.redact import Redactor
from hermes.testing.fake_model import FakeModel, Text

from ..server.conftest import AUTH, SERVER_KEY, open_api


class _Broken(MemoryProvider):
    name = "broken"

    async def prefetch(self, scope: str, session_id: str, user_message: str) -> str | None:
        raise ConnectionError(f"refused with key {SERVER_KEY} and sk-abcdefghijklmnopqrstuvwx")


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter(Redactor([SERVER_KEY])))
    root = logging.getLogger("hermes")
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)


async def test_turn_lines_carry_the_ids_and_no_secret(
    keyed_settings: Settings, fake: FakeModel, json_lines: io.StringIO
) -> None:
    fake.default = Text("ok")
    headers = {**AUTH, "X-Request-Id": "req-123", "X-Hermes-Session-Id": "chat-9"}
    async with open_api(keyed_settings) as api:
        api.runtime.agent.memory = MemoryLayers([_Broken()])
        r = await api.chat("hi", headers=headers)
    assert r.status_code == 200 and r.headers["x-request-id"] == "req-123"
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    [failed] = [line for line in lines if "prefetch failed" in line["message"]]
    assert failed["request_id"] == "req-123" and failed["session_id"] == "chat-9"
    assert failed["run_id"].startswith("turn_") and failed["level"] == "error"
    assert "ConnectionError" in failed["exception"]
    text = json_lines.getvalue()
    assert SERVER_KEY not in text and "abcdefghijklmnopqrstuvwx" not in text
    assert "[REDACTED]" in text


async def test_request_ids_are_echoed_or_made(settings: Settings, fake: FakeModel) -> None:
    async with open_api(settings) as api:
        made = await api.client.get("/health")
        kept = await api.client.get("/health", headers={"X-Request-Id": "abc-1"})
        refused = await api.client.get("/health", headers={"X-Request-Id": "bad id\twith tab"})
        error = await api.client.get("/v1/nothing-here", headers={"X-Request-Id": "e-1"})
    assert len(made.headers["x-request-id"]) == 32
    assert kept.headers["x-request-id"] == "abc-1"
    assert refused.headers["x-request-id"] not in ("bad id\twith tab", "")
    assert error.status_code == 404 and error.headers["x-request-id"] == "e-1"


def test_logging_format_json_sets_the_console_handler(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        settings.logging.format = "json"
        logs.configure(settings)
        assert isinstance(handler.formatter, logs.JsonFormatter)
        settings.logging.format = "text"
        logs.configure(settings)
        assert isinstance(handler.formatter, logs.RedactingFormatter)
    finally:
        root.removeHandler(handler)
