"""Code run in child processes by the cross-process tests (must be importable by `spawn`)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

from hermes.config.settings import load_settings
from hermes.cron.ticker import Scheduler
from hermes.runtime import build_runtime


def tick_after_barrier(home: str, base_url: str, now_iso: str, barrier: Any, out: Any) -> None:
    """Open Hermes on `home`, wait for the sibling process, then tick once at `now_iso`."""
    settings = load_settings(
        Path(home), env={"OPENAI_BASE_URL": base_url, "HERMES_MODEL": "fake-model"}
    )
    now = datetime.fromisoformat(now_iso)

    async def main() -> list[str]:
        runtime = build_runtime(settings)
        scheduler = Scheduler(runtime.agent, clock=lambda: now)
        try:
            barrier.wait(30)
            results = await scheduler.tick()
            return [r.job_id for r in results]
        finally:
            await scheduler.stop()
            await runtime.aclose()

    out.put(asyncio.run(main()))
