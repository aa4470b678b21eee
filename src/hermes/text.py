"""Small text helpers shared by the parts that show excerpts to a model or a person."""

from __future__ import annotations

import json
import re
from typing import Any


def clip(text: str | None, limit: int, *, squash: bool = False) -> str:
    """`text` cut to `limit` characters with an ellipsis; `squash` folds runs of whitespace."""
    text = text or ""
    if squash:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sentence(text: str) -> str:
    """`text` ending in one full stop: joined messages may or may not bring their own (a
    schedule error ending in its list of accepted forms does), and `..` reads as a typo."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def clean_surrogates(text: str) -> str:
    """`text` with lone UTF-16 surrogates (from a `\\ud800` JSON escape) replaced by U+FFFD.

    Valid pairs are already one character after `json.loads`, so any surrogate left is lone:
    it cannot be encoded as UTF-8, so a store would refuse it."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def find_lone_surrogate(value: Any, where: str = "") -> str | None:
    """The path (`messages[0].content`) of the first string in a decoded JSON value that
    holds a lone surrogate, or None. Keys count as their own place."""
    if isinstance(value, str):
        return where or "body" if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and _SURROGATE.search(key):
                return here
            found = find_lone_surrogate(item, here)
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = find_lone_surrogate(item, f"{where}[{i}]")
            if found:
                return found
    return None


def may_hold_surrogates(raw: bytes) -> bool:
    """Cheap pre-check on a JSON body: lone surrogates can only arrive as `\\uD8xx` escapes."""
    return _ESCAPED_SURROGATE.search(raw) is not None


def string_map(text: str | None) -> dict[str, str]:
    """A JSON object of strings read leniently: a small side file (note dates, a manifest of
    digests) that is missing, torn or hand-edited reads as empty rather than failing a read."""
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
