"""A run's events as Server-Sent Events: one JSON object per `data:` line, a keepalive comment
when nothing happened for a while, and the end of the stream after the final event.

The stream only reads the run: a client that goes away stops reading, never the run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
OPENAPI_SSE = {
    200: {
        "description": "Server-Sent Events: `data: {json}` per event, `: keepalive` comments.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


async def _frames(events: AsyncIterator[dict[str, Any] | None]) -> AsyncIterator[bytes]:
    async for event in events:
        if event is None:
            yield b": keepalive\n\n"
        else:
            yield b"data: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"
    yield b": stream closed\n\n"


def event_stream(
    events: AsyncIterator[dict[str, Any] | None], headers: dict[str, str] | None = None
) -> StreamingResponse:
    return StreamingResponse(
        _frames(events),
        media_type="text/event-stream; charset=utf-8",
        headers={**SSE_HEADERS, **(headers or {})},
    )
