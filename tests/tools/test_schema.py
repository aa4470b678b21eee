"""Tool schemas as the model reads them: compact, yet saying everything the arguments allow."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from hermes.agent.tokens import estimate_tools_tokens
from hermes.tools.registry import tool


@tool
def lookup(
    query: str,
    limit: int | None = None,
    tags: list[str] | None = None,
    since: int | str | None = None,
    prefix: str = "",
    window: int = 5,
    exact: bool = False,
    offset: int = 0,
) -> str:
    """Look something up.

    Args:
        query: what to look for.
        limit: how many results.
        tags: only these tags.
        since: a date or a number of days.
        prefix: only names starting with this.
        window: lines around each hit.
        exact: whole words only.
        offset: results to skip.
    """
    return f"{query} {limit} {tags} {since} {prefix!r} {window} {exact} {offset}"


def test_optional_arguments_are_plain_optional_properties() -> None:
    parameters = lookup.schema()["function"]["parameters"]
    assert parameters["required"] == ["query"]
    assert "additionalProperties" not in parameters
    props = parameters["properties"]
    assert props["limit"] == {"type": "integer", "description": "how many results."}
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "only these tags.",
    }
    assert props["since"] == {
        "type": ["integer", "string"],
        "description": "a date or a number of days.",
    }
    assert props["prefix"] == {"type": "string", "description": "only names starting with this."}
    assert props["window"]["default"] == 5  # a default that says something stays
    assert props["exact"] == {"type": "boolean", "description": "whole words only."}  # off
    assert props["offset"]["default"] == 0  # a number, not a flag left off
    assert "null" not in json.dumps(parameters) and "title" not in json.dumps(parameters)


def test_validation_still_accepts_null_and_refuses_unknown_arguments() -> None:
    assert (
        asyncio.run(lookup.invoke(None, {"query": "q", "limit": None}))
        == "q None None None '' 5 False 0"
    )  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        asyncio.run(lookup.invoke(None, {"query": "q", "colour": "red"}))  # type: ignore[arg-type]


def test_tool_token_estimate_is_chars_over_four_of_the_compact_json() -> None:
    schemas = [lookup.schema(), {"type": "function", "function": {"name": "plain"}}]
    compact = json.dumps(schemas, separators=(",", ":"))
    assert estimate_tools_tokens(schemas) == (len(compact) + 3) // 4
    assert estimate_tools_tokens([]) == 0
