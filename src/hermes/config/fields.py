"""Field types the settings sections share, including those parts declare next to their code
(a platform's `gateway.<name>` model): one rule for how a list is written in the environment."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator


def comma_list(value: Any) -> Any:
    """A list as a before-validator reads it: the environment gives one string, so `a, b` is
    ["a", "b"]; numbers in config.yaml (a Telegram id, one or in a list) become text."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, int) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list):
        return [str(v) for v in value]
    return value


CommaList = Annotated[list[str], BeforeValidator(comma_list)]
"""`list[str]` that also accepts `a,b` (environment) and numbers (YAML)."""


# Default factories as plain functions, not `list`/`dict`: pydantic reads each factory's
# signature when it builds a model, and a builtin type's is parsed from its text (~0.5 ms each,
# and ~10 ms more for the first, which compiles the tokenizer's patterns), a function's at once.
def empty_list() -> list[Any]:
    return []


def empty_dict() -> dict[str, Any]:
    return {}
