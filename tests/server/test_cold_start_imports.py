"""What `hermes serve` imports before its first /health (issue #44: cold start ≤ 0.5 s): the
app is built without the modules only some requests need (YAML for skills and config writes,
croniter for cron expressions, pydantic.v1 for FastAPI's check of a route's types, the openai
SDK and numpy loaded in the background after start, the route modules of the parts whose
routes are built at their first request)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys

from hermes.server.lazy_openapi import import_fastapi

import_fastapi()  # as hermes.server.serve does, first
from hermes.config.settings import load_settings
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from hermes.server.serve import check_bots

settings = load_settings()
check_bots(settings)
create_app(build_runtime(settings))
later = ("yaml", "croniter", "pydantic.v1", "openai", "numpy")
# parts' routes built at their first request: none of their modules before it
later += tuple(f"hermes.server.{m}" for m in ("jobs_api", "keys_api", "logs_api", "ui.routes"))
print(sorted(m for m in later if m in sys.modules))
"""


def test_the_app_is_built_without_what_requests_load_later() -> None:
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
