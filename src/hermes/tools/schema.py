"""The JSON schema of a tool's arguments, as the model reads it: pydantic's, made compact.

Every request carries every tool schema, so their size is paid on every model call. pydantic
spells an optional argument `{"anyOf": [{"type": "string"}, {"type": "null"}], "default":
null}`; to a model an argument left out of `required` already says "optional", so that
becomes `{"type": "string"}` (a fifth of the toolset's characters). Null is still accepted
when a model sends it: arguments are validated by the pydantic model, not by this schema.
Titles go too (the property name says the same), and so do defaults that say "nothing" ("",
[], and false: a flag left out is off) and the top-level `additionalProperties: false`: unknown arguments are refused by that
same validation, with an error the model reads, and OpenAI's strict mode (the one reader that
needs the flag) is not used for Hermes's own tools.
"""

from __future__ import annotations

from typing import Any

_NULL = {"type": "null"}
_EMPTY: tuple[Any, ...] = ("", [], False)


def tool_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's whole argument schema (an object), compacted for the model."""
    out = compact_schema(schema)
    if out.get("additionalProperties") is False:
        del out["additionalProperties"]
    out.setdefault("properties", {})
    return out


def compact_schema(node: Any) -> Any:
    """`node` without titles, with optional-or-null arguments as plain optional ones."""
    if isinstance(node, list):
        return [compact_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: compact_schema(v) for k, v in node.items() if k != "title"}
    alternatives = out.get("anyOf")
    if isinstance(alternatives, list) and _NULL in alternatives and out.get("default", 0) is None:
        rest = [a for a in alternatives if a != _NULL]
        del out["anyOf"], out["default"]
        if len(rest) == 1 and isinstance(rest[0], dict):
            out = {**rest[0], **out}
        elif rest and all(isinstance(a, dict) and a.keys() == {"type"} for a in rest):
            out = {"type": [a["type"] for a in rest], **out}
        elif rest:
            out["anyOf"] = rest
    if "default" in out and any(
        out["default"] == e and type(out["default"]) is type(e) for e in _EMPTY
    ):
        del out["default"]
    return out
