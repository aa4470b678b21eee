"""What the OpenAPI schema shows of an answer: one way to attach an example JSON body."""

from __future__ import annotations

from typing import Any


def json_example(example: Any, status: int = 200) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route whose `status` answer is JSON like `example`."""
    return {status: {"content": {"application/json": {"example": example}}}}
