"""Issue 33: one wording for every refusal. Each error names what is wrong in a sentence, has
a non-null code, and never leaks pydantic's or a JSON parser's jargon."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import Api

JARGON = re.compile(
    r"Extra inputs are not permitted|JSON decode error|Input should be|Field required|"
    r"value is not a valid|validation error|pydantic|errors\.pydantic\.dev|type=|\burl\b",
    re.IGNORECASE,
)

BAD_JSON = b'{"model": "hermes", "messages": [}'

# (method, path, raw body or JSON, what the message must name)
CASES: list[tuple[str, str, Any, str | None]] = [
    ("POST", "/v1/chat/completions", BAD_JSON, "JSON"),
    ("POST", "/v1/chat/completions", {"messages": "hi"}, "messages"),
    ("POST", "/v1/chat/completions", {"messages": [], "bogus": 1}, "bogus"),
    ("POST", "/v1/responses", BAD_JSON, "JSON"),
    ("POST", "/v1/responses", {"input": "hi", "bogus": 1}, "bogus"),
    ("POST", "/v1/responses", {"input": 5}, "input"),
    ("POST", "/v1/responses", {"input": "hi", "conversation": "bad id!"}, "conversation"),
    ("POST", "/api/jobs", BAD_JSON, "JSON"),
    (
        "POST",
        "/api/jobs",
        {"name": "n", "schedule": "every 1h", "prompt": "p", "bogus": 1},
        "bogus",
    ),
    ("POST", "/api/jobs", {"name": 5, "schedule": "every 1h", "prompt": "p"}, "name"),
    ("POST", "/api/jobs", {"schedule": "every 1h", "prompt": "p"}, "name"),
    ("POST", "/api/jobs", [1, 2], None),
    ("PATCH", "/api/jobs/nope", {"bogus": 1}, None),
]


@pytest.mark.parametrize(("method", "path", "body", "names"), CASES)
async def test_every_refusal_is_a_sentence_with_a_code(
    api: Api, method: str, path: str, body: Any, names: str | None
) -> None:
    kwargs: dict[str, Any] = (
        {"content": body, "headers": {"content-type": "application/json"}}
        if isinstance(body, bytes)
        else {"json": body}
    )
    r = await api.client.request(method, path, **kwargs)
    assert 400 <= r.status_code < 500, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "code", "param"}
    assert error["code"], r.text
    assert error["type"] == "invalid_request_error"
    message = error["message"]
    assert not JARGON.search(message), message
    assert message[0].isupper() or message[0] == "`", message
    assert message.endswith("."), message
    if names is not None:
        assert names in message, message
