"""The one place that knows where HERMES_HOME is and what lives in it, profiles included.

A profile is a home of its own: `$HERMES_HOME/profiles/<name>/` holds that profile's
config.yaml, .env, SOUL.md, notes, skills, cron jobs and store, used exactly as the root home
is. The profile `default` is the root home itself. `HERMES_PROFILE` (or `hermes -p NAME`)
picks the profile; an unknown or malformed name is refused, never created by accident.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from hermes.errors import HermesError

HOME_SUBDIRS = ("memories", "users", "skills", "cron", "cron/output", "logs")
DEFAULT_PROFILE = "default"
PROFILES_DIR = "profiles"
PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class ProfileError(HermesError, ValueError):
    """A profile name is malformed or names no profile; the message says which and what to do."""


def root_home(env: Mapping[str, str] | None = None) -> Path:
    """HERMES_HOME if set, else ~/.hermes: the default profile's home (not created here)."""
    env = os.environ if env is None else env
    raw = env.get("HERMES_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".hermes"


def validate_profile_name(name: str) -> str:
    """A profile name is a directory name: lowercase letters, digits, _ and -, 1-64 chars."""
    if not PROFILE_NAME.match(name):
        raise ProfileError(
            f"{name!r} is not a profile name: use 1-64 lowercase letters, digits, _ or -, "
            "starting with a letter or digit"
        )
    return name


def active_profile(env: Mapping[str, str] | None = None) -> str:
    """The profile HERMES_PROFILE names (validated); `default` when unset or empty."""
    env = os.environ if env is None else env
    raw = (env.get("HERMES_PROFILE") or "").strip()
    return validate_profile_name(raw) if raw else DEFAULT_PROFILE


def profile_home(root: Path, name: str) -> Path:
    """Where profile `name` lives under `root` (the root itself for `default`)."""
    if validate_profile_name(name) == DEFAULT_PROFILE:
        return root
    return root / PROFILES_DIR / name


def profile_exists(root: Path, name: str) -> bool:
    return name == DEFAULT_PROFILE or profile_home(root, name).is_dir()


def existing_profile_home(root: Path, name: str) -> Path:
    """The home of an existing profile; ProfileError (saying how to create it) otherwise."""
    home = profile_home(root, name)
    if not profile_exists(root, name):
        raise ProfileError(
            f"there is no profile {name!r}; create it with `hermes profile create {name}` "
            "(`hermes profile list` shows the existing ones)"
        )
    return home


def list_profiles(root: Path) -> list[str]:
    """`default` first, then every well-named directory under profiles/, sorted."""
    found = []
    directory = root / PROFILES_DIR
    if directory.is_dir():
        for entry in directory.iterdir():
            if entry.is_dir() and PROFILE_NAME.match(entry.name) and entry.name != DEFAULT_PROFILE:
                found.append(entry.name)
    return [DEFAULT_PROFILE, *sorted(found)]


def hermes_home(env: Mapping[str, str] | None = None) -> Path:
    """The active profile's home: HERMES_HOME (or ~/.hermes), or its profiles/<HERMES_PROFILE>."""
    env = os.environ if env is None else env
    root = root_home(env)
    return existing_profile_home(root, active_profile(env))


def ensure_home(home: Path) -> Path:
    """Create the home layout on first use; private to the owner (0700 dirs, 0600 secrets)."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    for sub in HOME_SUBDIRS:
        (home / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    for secret in (home / ".env",):
        if secret.exists() and (secret.stat().st_mode & 0o077):
            secret.chmod(0o600)
    return home
