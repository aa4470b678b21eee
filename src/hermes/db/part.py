"""The database part: `hermes db …` commands and a `/health` check of the store's database
(latency, pool, migrations), whichever backend `store.url` names."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from hermes.plugins import Registry

if TYPE_CHECKING:
    from hermes.runtime import Runtime


def _commands() -> Any:
    from hermes.db.cli import app

    return app


async def database_health(runtime: Runtime) -> dict[str, Any]:
    """`ok` with the backend's figures (latency, pool, schema), or `error` with a sentence."""
    from hermes.store.base import StoreError

    store = runtime.store
    started = time.perf_counter()
    try:
        status = await asyncio.to_thread(store.schema_status)
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        report: dict[str, Any] = {"backend": status.backend, "latency_ms": latency_ms}
        if status.backend == "postgresql":  # cheap there: one query and the pool's counters
            report.update(await asyncio.to_thread(store.health))
            report.pop("ok", None)
    except StoreError as exc:
        return {"status": "error", "error": str(exc)}
    report["schema_version"] = status.version
    report["pending_migrations"] = [v for v, _ in status.pending]
    if status.pending:
        report["error"] = (
            f"migrations {report['pending_migrations']} are not applied; run `hermes db migrate`"
        )
    return {"status": "error" if status.pending else "ok", **report}


def register(hermes: Registry) -> None:
    hermes.command("db", _commands)
    hermes.health("database", database_health)
