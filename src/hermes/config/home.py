"""The one place that knows where HERMES_HOME is and what lives in it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

HOME_SUBDIRS = ("memories", "users", "skills", "cron", "cron/output", "logs")


def hermes_home(env: Mapping[str, str] | None = None) -> Path:
    """HERMES_HOME if set, else ~/.hermes (not created here)."""
    env = os.environ if env is None else env
    raw = env.get("HERMES_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".hermes"


def ensure_home(home: Path) -> Path:
    """Create the home layout on first use; private to the owner (0700 dirs, 0600 secrets)."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    for sub in HOME_SUBDIRS:
        (home / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    for secret in (home / ".env",):
        if secret.exists() and (secret.stat().st_mode & 0o077):
            secret.chmod(0o600)
    return home
