"""What `hermes gateway status --json` and `GET /api/gateway` show: whether the gateway runs
(its status file's writer is alive), the home chat, the busy mode, and each platform:
configured, connected, messages in and out, restarts, last error."""

from __future__ import annotations

from typing import Any

from hermes.config.settings import Settings
from hermes.gateway.platforms import all_specs
from hermes.gateway.state import StatusFile, pid_alive, read_json
from hermes.plugins import Registry
from hermes.store.base import RecordStore


def gateway_report(
    settings: Settings, records: RecordStore | None = None, registry: Registry | None = None
) -> dict[str, Any]:
    """The report, read from `$HERMES_HOME/gateway/status.json`, or with a shared database
    from every replica's status record (an adapter shows the replica where it is
    connected, e.g. the one holding its poller lease); no running server needed. A server
    passes its registry: loading one reads every installed distribution's metadata."""
    status = StatusFile(settings.home, records)
    if records is not None:
        data = _merged(status.replicas())
        running = data.get("pid") is not None
    else:
        data = read_json(status.path)
        running = pid_alive(data.get("pid"))
    found = data.get("adapters")
    recorded: dict[str, Any] = found if isinstance(found, dict) else {}
    adapters: dict[str, Any] = {}
    for spec in all_specs(registry, settings):
        entry = dict(recorded.get(spec.name) or {})
        entry["configured"] = spec.configured(settings)
        if not running:
            entry["connected"] = False
        adapters[spec.name] = entry
    return {
        "running": running,
        "pid": data.get("pid") if running else None,
        "home": settings.gateway.home,
        "busy_mode": settings.gateway.busy_mode,
        "adapters": adapters,
    }


def _merged(replicas: list[dict[str, Any]]) -> dict[str, Any]:
    """One report from several replicas' statuses: per adapter, a connected replica's entry
    if any, else the newest; `pid` of the newest replica (None when none is alive)."""
    adapters: dict[str, Any] = {}
    for body in replicas:  # newest first
        for name, entry in (body.get("adapters") or {}).items():
            if name not in adapters or (
                entry.get("connected") and not adapters[name].get("connected")
            ):
                adapters[name] = entry
    return {"pid": replicas[0].get("pid") if replicas else None, "adapters": adapters}
