"""Small text helpers shared by the parts that show excerpts to a model or a person."""

from __future__ import annotations


def clip(text: str | None, limit: int, *, squash: bool = False) -> str:
    """`text` cut to `limit` characters with an ellipsis; `squash` folds runs of whitespace."""
    text = text or ""
    if squash:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
