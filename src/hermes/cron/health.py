"""The cron ticker's entry in `/health/detailed` and `hermes doctor`: is anything ticking?

A ticker that stopped or stalls fails quietly (jobs just never run), so its health says
when it last ticked and names the fix; outside `hermes serve` nothing ticks, which is `off`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.cron.ticker import Scheduler
    from hermes.runtime import Runtime

STALL_TICKS = 3  # this many missed ticks (plus a grace) make a stalled ticker
STALL_GRACE_S = 30.0
RESTART_FIX = "restart hermes serve; the log's `cron tick failed` lines say what broke"


def ticker_health(
    scheduler: Scheduler | None, tick_seconds: float, enabled: bool
) -> dict[str, Any]:
    """`ok` while the loop ticks on time; `error` when it ended or its last tick failed;
    `degraded` when it stalls or a jobs file could not be read; `off` when nothing should tick."""
    if not enabled:
        return {"status": "off", "detail": "cron.enabled is false"}
    if scheduler is None or not scheduler.ticking:
        return {"status": "off", "detail": "jobs tick inside hermes serve only"}
    every = f"every {tick_seconds:g} s"
    if scheduler.loop_ended:
        return {"status": "error", "error": "the cron ticker stopped", "fix": RESTART_FIX}
    if scheduler.tick_error:
        error = f"the last cron tick failed: {scheduler.tick_error}"
        return {"status": "error", "error": error, "fix": RESTART_FIX}
    since = scheduler.ticked_at or scheduler.loop_started_at or time.monotonic()
    quiet = time.monotonic() - since
    if quiet > STALL_TICKS * tick_seconds + STALL_GRACE_S:
        reason = f"no cron tick for {quiet:.0f} s (expected {every})"
        return {"status": "degraded", "reason": reason, "fix": RESTART_FIX}
    if scheduler.skipped:  # a count, not paths or scopes: those name users
        reason = f"{len(scheduler.skipped)} jobs file(s) cannot be read, so their jobs never run"
        fix = "repair each file the log's `cron tick skipped` lines name (or recreate its jobs)"
        return {"status": "degraded", "reason": reason, "fix": fix}
    last = "first tick pending" if scheduler.ticked_at is None else f"last tick {quiet:.0f} s ago"
    detail = f"{last}, {every}, {scheduler.runs_in_flight} run(s) in flight"
    return {"status": "ok", "detail": detail}


async def cron_health(runtime: Runtime) -> dict[str, Any]:
    from hermes.cron.ticker import Scheduler

    cron = runtime.settings.cron
    return ticker_health(runtime.services.find(Scheduler), cron.tick_seconds, cron.enabled)
