"""What `hermes gateway status --json` and `GET /api/gateway` show: whether the gateway runs
(its status file's writer is alive), the home chat, the busy mode, and each platform:
configured, connected, messages in and out, restarts, last error."""

from __future__ import annotations

from typing import Any

from hermes.config.settings import Settings
from hermes.gateway.platforms import all_specs
from hermes.gateway.state import StatusFile, pid_alive, read_json


def gateway_report(settings: Settings) -> dict[str, Any]:
    """The report, read from `$HERMES_HOME/gateway/status.json` (no running server needed)."""
    data = read_json(StatusFile(settings.home).path)
    running = pid_alive(data.get("pid"))
    found = data.get("adapters")
    recorded: dict[str, Any] = found if isinstance(found, dict) else {}
    adapters: dict[str, Any] = {}
    for spec in all_specs(settings=settings):
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
