"""FastAPI's validation errors as Hermes sentences: name the field, say what to send.

Pydantic's own words ("Extra inputs are not permitted", "Input should be a valid string",
"JSON decode error") describe the validator, not the request; a client author reading an error
wants the field, the problem and the fix. Used by the shared handler in `server.errors`.
"""

from __future__ import annotations

from typing import Any

_NOUNS = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "datetime_type": "a date and time (ISO 8601)",
    "datetime_parsing": "a date and time (ISO 8601)",
    "date_type": "a date (YYYY-MM-DD)",
    "date_parsing": "a date (YYYY-MM-DD)",
}
_BOUNDS = {
    "greater_than": ("gt", "greater than"),
    "greater_than_equal": ("ge", "at least"),
    "less_than": ("lt", "less than"),
    "less_than_equal": ("le", "at most"),
}


def json_type(value: Any) -> str:
    """The JSON name of a value's type, as a client sees it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def invalid_json_sentence(error: dict[str, Any]) -> str:
    """`{"type": "json_invalid", "loc": ("body", 33), "ctx": {"error": "Expecting value"}}`."""
    ctx = error.get("ctx") or {}
    loc: list[Any] = list(error.get("loc") or ())
    where = f" at character {loc[1]}" if len(loc) > 1 and isinstance(loc[1], int) else ""
    reason = str(ctx.get("error") or "it cannot be parsed").rstrip(".")
    return (
        f"The request body is not valid JSON ({reason}{where}); send one JSON object "
        "with Content-Type: application/json."
    )


def sentence(error: dict[str, Any], param: str) -> str:
    """One pydantic error as a sentence naming `param` (no final period)."""
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    subject = "The request body" if param in ("", "body") else f"`{param}`"
    if kind == "extra_forbidden":
        return f"{subject} is not a field this endpoint accepts; remove it"
    if kind == "missing":
        return f"{subject} is required; add it"
    if kind in _NOUNS:
        return f"{subject} must be {_NOUNS[kind]}, not {json_type(error.get('input'))}"
    if kind in ("string_too_long", "string_too_short", "too_long", "too_short"):
        return _length(kind, ctx, subject)
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        return f"{subject} must be {words} {ctx.get(key)}"
    if kind in ("literal_error", "enum"):
        return f"{subject} must be {ctx.get('expected')}"
    message = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
    message = message.removeprefix("Assertion failed, ").rstrip(".")
    if message.startswith("Input should be "):
        message = "must be " + message.removeprefix("Input should be ")
        return f"{subject} {message}"
    return f"{subject} is not valid: {message[:1].lower()}{message[1:]}"


def _length(kind: str, ctx: dict[str, Any], subject: str) -> str:
    unit = "characters" if kind.startswith("string") else "items"
    if kind.endswith("too_long"):
        return f"{subject} is too long: at most {ctx.get('max_length')} {unit}; shorten it"
    return f"{subject} is too short: at least {ctx.get('min_length')} {unit}"
