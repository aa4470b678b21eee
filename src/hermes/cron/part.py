"""The cron part: the `cronjob` tool, the one Scheduler of a runtime, its ticker daemon and
the ticker's health entry.
(`/api/jobs` is the server's own router: it lives with the other HTTP routes.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from hermes.plugins import Count, Daemon, Registry

if TYPE_CHECKING:
    from hermes.runtime import Runtime


def _scheduler(runtime: Runtime) -> object:
    from hermes.cron.ticker import Scheduler

    return Scheduler(runtime.agent)


def _ticker(runtime: Runtime) -> Daemon | None:
    """The ticker as a `hermes serve` daemon: ticks at start (catch-up), then periodically."""
    from hermes.cron.ticker import Scheduler

    if not runtime.settings.cron.enabled:
        return None
    scheduler = runtime.services.get(Scheduler)

    async def start() -> None:
        scheduler.start()

    return Daemon("cron ticker", start, scheduler.stop)


def _counts(runtime: Runtime) -> Iterator[Count]:
    """Cron runs by outcome, late (catch-up) runs and deliveries, for `/metrics`."""
    from hermes.cron.ticker import Scheduler

    scheduler = runtime.services.find(Scheduler)
    if scheduler is None:
        return
    stats = scheduler.stats
    runs = "Cron job runs by outcome (ok, error, delivery_failed, interrupted, cancelled)."
    for outcome in dict.fromkeys(("ok", "error", "delivery_failed", *sorted(stats.runs))):
        yield Count("cron_runs", runs, stats.runs[outcome], {"outcome": outcome})
    yield Count(
        "cron_late_runs",
        "Scheduled runs started over two ticks after their slot: Hermes was down or busy, "
        "and the slots it missed became this one catch-up run.",
        stats.late,
    )
    sent = "Cron answers delivered or failed, by target kind (webhook, telegram, home, …)."
    for (kind, outcome), n in sorted(stats.deliveries.items()):
        yield Count("cron_deliveries", sent, n, {"target": kind, "outcome": outcome})


def register(hermes: Registry) -> None:
    from hermes.cron.health import cron_health
    from hermes.cron.tool import cronjob

    hermes.tool(cronjob, group="cron", enabled=lambda settings: settings.cron.enabled)
    hermes.component(_scheduler)
    hermes.daemon(_ticker)
    hermes.health("cron", cron_health)
    hermes.metrics(_counts)
