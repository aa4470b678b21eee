"""Tokens and cost per user, model and day: each turn's usage is recorded by model after the
turn (`record_turn`), and `report` sums the records for `GET /api/usage` and `hermes usage`.

Cost is tokens times `model.pricing` (USD per million tokens, as `/usage` in `hermes chat`
computes it) for the configured model; a model without a known price costs `None` rather
than a guess, and is listed in the totals as unpriced.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo

from hermes.config.settings import PricingSettings, Settings
from hermes.scopes import user_of_scope
from hermes.store.base import Store, UsageRecord, UsageTotal

if TYPE_CHECKING:
    from hermes.models.types import Usage

log = logging.getLogger(__name__)

PER_MILLION = 1_000_000
FLUSH_SECONDS = 5.0
Dimension = Literal["day", "model", "user"]
DIMENSIONS: tuple[Dimension, ...] = ("day", "model", "user")


def zone(settings: Settings) -> ZoneInfo | None:
    return ZoneInfo(settings.timezone) if settings.timezone else None


def today(settings: Settings) -> date:
    return datetime.now(UTC).astimezone(zone(settings)).date()


def turn_records(
    settings: Settings,
    *,
    scope: str,
    session_id: str | None,
    source: str,
    by_model: Mapping[str, tuple[Usage, int]],
    at: float,
) -> list[UsageRecord]:
    """One record per model the turn called (tokens, calls), dated in the configured zone."""
    day = datetime.fromtimestamp(at, UTC).astimezone(zone(settings)).date().isoformat()
    return [
        UsageRecord(
            scope=scope,
            model=model,
            day=day,
            at=at,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            calls=calls,
            session_id=session_id,
            source=source,
        )
        for model, (usage, calls) in by_model.items()
    ]


async def record(store: Store, records: Sequence[UsageRecord]) -> None:
    """Write the records off the event loop; a failure is logged, never the turn's."""
    if store.usage is None or not records:
        return
    try:
        await asyncio.to_thread(store.usage.record_usage, records)
    except Exception:
        log.exception("recording the token usage of %d turn(s) failed", len(records))


class UsageRecorder:
    """Buffers turns' records and writes them together `delay` seconds after the first:
    a turn stays two database writes (tests/test_agent_loop.py), and a busy server writes
    its usage once every few seconds instead of once per turn. `flush` writes now (a
    report in this process, shutdown)."""

    def __init__(self, store: Store, *, delay: float = FLUSH_SECONDS) -> None:
        self.store = store
        self.delay = delay
        self._pending: list[UsageRecord] = []
        self._timer: asyncio.TimerHandle | None = None
        self._writes: set[asyncio.Task[None]] = set()

    def add(self, records: Sequence[UsageRecord]) -> None:
        if not records or self.store.usage is None:
            return
        self._pending.extend(records)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.delay, self._due)

    def _due(self) -> None:
        self._timer = None
        task = asyncio.get_running_loop().create_task(self._write_pending())
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write_pending(self) -> None:
        records, self._pending = self._pending, []
        await record(self.store, records)

    async def flush(self) -> None:
        """Write what is pending, and wait for writes already under way (a timed write
        never waits for itself: that was a shutdown that never ended)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        await self._write_pending()
        if self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)


def day_bounds(settings: Settings, first: date, last: date) -> tuple[float, float]:
    """[start of `first`, start of the day after `last`) as timestamps in the configured zone."""
    tz = zone(settings) or datetime.now(UTC).astimezone().tzinfo
    start = datetime.combine(first, datetime.min.time(), tz)
    end = datetime.combine(last + timedelta(days=1), datetime.min.time(), tz)
    return start.timestamp(), end.timestamp()


def price_for(settings: Settings, model: str) -> PricingSettings | None:
    """`model.pricing` applies to the configured model (`model.name`) only."""
    pricing = settings.model.pricing
    if pricing is not None and model == settings.model.name:
        return pricing
    return None


def cost(pricing: PricingSettings | None, prompt: int, completion: int) -> float | None:
    if pricing is None:
        return None
    return round((prompt * pricing.input + completion * pricing.output) / PER_MILLION, 6)


@dataclass(frozen=True)
class Report:
    rows: list[dict[str, Any]]
    totals: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"usage": self.rows, "totals": self.totals}


def report(
    settings: Settings, totals: Sequence[UsageTotal], group_by: Sequence[Dimension]
) -> Report:
    """Sum `totals` over the dimensions not in `group_by`; each row with its cost."""
    sums: dict[tuple[Any, ...], list[Any]] = {}
    for t in totals:
        values = {"day": t.day, "model": t.model, "user": user_of_scope(t.scope)}
        key = tuple(values[d] for d in group_by)
        row = sums.setdefault(key, [0, 0, 0, 0.0, True])
        row[0] += t.prompt_tokens
        row[1] += t.completion_tokens
        row[2] += t.calls
        price = cost(price_for(settings, t.model), t.prompt_tokens, t.completion_tokens)
        if price is None:
            row[4] = False
        else:
            row[3] += price
    rows: list[dict[str, Any]] = []
    for key, (prompt, completion, calls, dollars, priced) in sums.items():
        line: dict[str, Any] = dict(zip(group_by, key, strict=True))
        line.update(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            calls=calls,
            cost_usd=round(dollars, 6) if priced else None,
        )
        rows.append(line)
    rows.sort(key=lambda r: tuple(_sort_key(r.get(d)) for d in group_by))
    return Report(rows, _totals(settings, totals))


def _sort_key(value: Any) -> str:
    return "" if value is None else str(value)


def _totals(settings: Settings, totals: Sequence[UsageTotal]) -> dict[str, Any]:
    prompt = sum(t.prompt_tokens for t in totals)
    completion = sum(t.completion_tokens for t in totals)
    priced = [
        c
        for t in totals
        if (c := cost(price_for(settings, t.model), t.prompt_tokens, t.completion_tokens))
        is not None
    ]
    unpriced = sorted({t.model for t in totals if price_for(settings, t.model) is None})
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "calls": sum(t.calls for t in totals),
        "cost_usd": round(sum(priced), 6) if priced or not totals else None,
        "unpriced_models": unpriced,
    }
