"""`GET /api/usage`: tokens and cost per day, model and user (SPEC §13).

A scoped key, or a caller naming a user with `X-Hermes-User-Id`, sees that user's usage
only; the owner (server key, or an open loopback server) sees every user and may narrow to
one with `user`. Days are those of the configured timezone (`timezone`).
"""

from __future__ import annotations

import asyncio
from datetime import date, timedelta
from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from hermes.observability import usage
from hermes.runtime import Runtime
from hermes.scopes import InvalidIdError, scope_for_user
from hermes.server.deps import USER_HEADER, get_runtime, get_scope, require_auth
from hermes.server.errors import APIError

router = APIRouter(tags=["usage"], dependencies=[Depends(require_auth)])

DEFAULT_DAYS = 30
MAX_DAYS = 3660

EXAMPLE = {
    "usage": [
        {
            "day": "2026-01-05",
            "model": "gpt-4o-mini",
            "user": "alice",
            "prompt_tokens": 1200,
            "completion_tokens": 300,
            "total_tokens": 1500,
            "calls": 3,
            "cost_usd": 0.00036,
        }
    ],
    "totals": {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "calls": 3,
        "cost_usd": 0.00036,
        "unpriced_models": [],
    },
}


def _day(value: str | None, param: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise APIError(
            400,
            f"`{param}` is {value!r}, not a date: write it as YYYY-MM-DD (e.g. 2026-01-31).",
            code="invalid_date",
            param=param,
        ) from None


def _group_by(value: str) -> list[usage.Dimension]:
    names = [part.strip() for part in value.split(",") if part.strip()]
    wrong = [n for n in names if n not in usage.DIMENSIONS]
    if wrong or not names or len(set(names)) != len(names):
        raise APIError(
            400,
            f"`group_by` is {value!r}: give one or more of day, model, user, comma-separated "
            "and each once (e.g. day,model).",
            code="invalid_group_by",
            param="group_by",
        )
    return [d for d in usage.DIMENSIONS if d in names]  # type: ignore[misc]


def _window(first: date | None, last: date | None, today: date) -> tuple[date, date]:
    last = last or today
    first = first or last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        raise APIError(
            400,
            f"`from` ({first}) is after `to` ({last}); swap them.",
            code="invalid_date_range",
            param="from",
        )
    if (last - first).days >= MAX_DAYS:
        raise APIError(
            400,
            f"The range {first} to {last} is longer than {MAX_DAYS} days; ask in parts.",
            code="invalid_date_range",
            param="from",
        )
    return first, last


async def _scope_filter(request: Request, scope: str, user: str | None) -> str | None:
    """The scope whose usage is shown, or None for every scope (the owner, unnarrowed)."""
    admin = (
        getattr(request.state, "api_key", None) is None and request.headers.get(USER_HEADER) is None
    )
    if user is None:
        return None if admin else scope
    try:
        wanted = scope_for_user(user)
    except InvalidIdError as exc:
        raise APIError(400, f"`user`: {exc}.", code="invalid_user_id", param="user") from None
    if not admin and wanted != scope:
        raise APIError(
            403,
            "Only the owner (server key) may read another user's usage; leave `user` out to "
            "read your own.",
            "permission_error",
            "admin_only",
            "user",
        )
    return wanted


@router.get(
    "/api/usage",
    summary="Tokens and cost per day, model and user",
    responses={200: {"content": {"application/json": {"example": EXAMPLE}}}},
)
async def get_usage(
    request: Request,
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
    from_: str | None = Query(
        None, alias="from", description="First day (YYYY-MM-DD); default 29 days before `to`."
    ),
    to: str | None = Query(None, description="Last day, included (YYYY-MM-DD); default today."),
    group_by: str = Query(
        "day,model,user", description="Comma-separated: day, model, user (rows sum the rest)."
    ),
    user: str | None = Query(None, description="The owner only: one end user's usage."),
) -> dict[str, Any]:
    """Tokens per turn summed by the chosen dimensions, each row with its cost in USD
    (`model.pricing` of the configured model; null where no price is known). `user` is null
    for the owner's own turns."""
    dimensions = _group_by(group_by)
    first, last = _window(_day(from_, "from"), _day(to, "to"), usage.today(runtime.settings))
    only = await _scope_filter(request, scope, user)
    store = runtime.store.usage
    if store is None:
        return usage.report(runtime.settings, [], dimensions).as_dict()
    await runtime.agent.usage.flush()
    since, until = usage.day_bounds(runtime.settings, first, last)
    totals = await asyncio.to_thread(store.usage_totals, since=since, until=until, scope=only)
    body = usage.report(runtime.settings, totals, dimensions).as_dict()
    body["from"], body["to"] = first.isoformat(), last.isoformat()
    return body
