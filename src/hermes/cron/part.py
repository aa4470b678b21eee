"""The cron part: the `cronjob` tool, the one Scheduler of a runtime, and its ticker service.
(`/api/jobs` is the server's own router: it lives with the other HTTP routes.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.plugins import Registry, Service

if TYPE_CHECKING:
    from hermes.runtime import Runtime


def _scheduler(runtime: Runtime) -> object:
    from hermes.cron.ticker import Scheduler

    return Scheduler(runtime.agent)


def _ticker(runtime: Runtime) -> Service | None:
    """The ticker as a `hermes serve` service: ticks at start (catch-up), then periodically."""
    from hermes.cron.ticker import Scheduler

    if not runtime.settings.cron.enabled:
        return None
    scheduler = runtime.services.get(Scheduler)

    async def start() -> None:
        scheduler.start()

    return Service("cron ticker", start, scheduler.stop)


def register(hermes: Registry) -> None:
    from hermes.cron.tool import cronjob

    hermes.tool(cronjob, group="cron", enabled=lambda settings: settings.cron.enabled)
    hermes.component(_scheduler)
    hermes.service(_ticker)
