"""Schemathesis over the OpenAPI document of a real `hermes serve`: for every operation it
declares, requests generated from the schema (well-formed and not) are answered without a
5xx, with the server key and without it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.core.errors import SerializationNotPossible

from hermes.testing.fake_model import FakeModel, Text
from tests.server.test_serve import hermes_serve

KEY = "fuzz-key-0123456789abcdef"
# requests per operation: a bounded sample (the suite's time), not an exhaustive search
KEYED_EXAMPLES = 10
ANONYMOUS_EXAMPLES = 2
NOT_GENERATED = {"POST /api/sessions/import"}  # an NDJSON upload: no generator for its body
STREAMS = {"GET /api/logs/stream"}  # open until the client leaves (tested on its own)


@pytest.fixture
def base_url(fake: FakeModel, model_env: dict[str, str]) -> Iterator[str]:
    fake.default = Text("ok")
    with hermes_serve(env={"HERMES_API_KEY": KEY}) as (_, base):
        yield base


def _server_errors(
    base: str, headers: dict[str, str], examples: int, not_generated: set[str]
) -> list[str]:
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    found: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.label in STREAMS:
            continue

        @given(case=operation.as_strategy())
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=True,  # the same requests every run: CI is never red by luck
            suppress_health_check=list(HealthCheck),
        )
        def call(case: Any) -> None:
            response = case.call(base_url=base, headers=headers, timeout=30)
            if response.status_code >= 500:
                found.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: "
                    f"{response.text[:200]}"
                )

        try:
            call()
        except SerializationNotPossible:
            not_generated.add(operation.label)
    return found


def test_no_operation_answers_a_generated_request_with_a_server_error(base_url: str) -> None:
    skipped: set[str] = set()
    keyed = {"Authorization": f"Bearer {KEY}"}
    errors = _server_errors(base_url, keyed, KEYED_EXAMPLES, skipped)
    errors += _server_errors(base_url, {}, ANONYMOUS_EXAMPLES, skipped)
    assert errors == []
    assert skipped == NOT_GENERATED
