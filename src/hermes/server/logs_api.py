"""`/api/logs`: the server's recent log lines and a live tail over SSE (issue 37), owner only.

Lines come from the `LogTail` that `hermes serve` attaches to the root logger, secrets already
masked. An app made without one (embedded, tests) answers 503 and says why.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import StreamingResponse

from hermes.observability.log_tail import LEVELS, LogTail
from hermes.server.deps import require_auth
from hermes.server.errors import SERVER_ERROR, APIError
from hermes.server.users_api import require_admin

router = APIRouter(
    prefix="/api/logs", tags=["logs"], dependencies=[Depends(require_auth), Depends(require_admin)]
)

Level = Query(None, description="Lowest level shown: " + ", ".join(LEVELS) + ".")
Text = Query(None, max_length=200, description="Only lines whose logger or message holds this.")
After = Query(0, ge=0, description="Only lines after this id (the last one you have).")
LINE = {
    "id": 42,
    "ts": "2026-01-05T10:00:00.000+00:00",
    "level": "warning",
    "logger": "hermes.server",
    "message": "upstream model failure: …",
}


def _tail(request: Request) -> LogTail:
    tail: LogTail | None = getattr(request.app.state, "log_tail", None)
    if tail is None:
        raise APIError(
            503,
            "This server keeps no log tail: `hermes serve` keeps one; an embedded app has to "
            "attach a LogTail (hermes.observability.log_tail) as app.state.log_tail.",
            SERVER_ERROR,
            "log_tail_unavailable",
        )
    return tail


def _level(value: str | None) -> str | None:
    if value is None:
        return None
    if value.lower() not in LEVELS:
        raise APIError(
            400,
            f"`level` is {value!r}: give one of {', '.join(LEVELS)}.",
            code="invalid_level",
            param="level",
        )
    return value.lower()


@router.get(
    "",
    summary="Recent log lines",
    responses={
        200: {"content": {"application/json": {"example": {"lines": [LINE], "last_id": 42}}}}
    },
)
async def recent(
    request: Request,
    level: str | None = Level,
    q: str | None = Text,
    after: int = After,
    limit: int = Query(200, ge=1, le=2000, description="At most this many (the newest)."),
) -> dict[str, Any]:
    """The newest lines (oldest first) kept in memory, secrets masked; `last_id` is the
    newest id kept, to follow on with `after` or the stream."""
    tail = _tail(request)
    lines = tail.recent(after=after, level=_level(level), text=q, limit=limit)
    newest = tail.recent(limit=1)
    return {"lines": lines, "last_id": newest[-1]["id"] if newest else 0}


@router.get(
    "/stream",
    summary="Follow the log (SSE)",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {"example": f"data: {json.dumps(LINE)}\n\n"}}}
    },
)
async def stream(
    request: Request, level: str | None = Level, q: str | None = Text, after: int = After
) -> StreamingResponse:
    """One `data:` JSON line per log line after `after` as it is logged, a `: ping`
    comment every 15 s of quiet; it runs until the client hangs up."""
    tail = _tail(request)
    wanted = _level(level)

    async def events() -> AsyncIterator[str]:
        async for line in tail.follow(after=after, level=wanted, text=q):
            if await request.is_disconnected():
                return
            yield ": ping\n\n" if line is None else f"data: {json.dumps(line)}\n\n"

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
