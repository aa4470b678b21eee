"""Profiles: several agents from one install, each a home of its own (SPEC §16).

`create` makes an empty home or one seeded from another profile's personality (config.yaml,
SOUL.md, skills); `copy` clones a whole profile (notes, users' notes, jobs, sessions too).
Neither ever copies secrets: the `.env` file, `server.api_key` and the `gateway` section
(bot credentials) stay with the profile they belong to, because a key opens one profile and
a bot token belongs to one profile. `delete` removes a home; the default profile (the root
HERMES_HOME) cannot be deleted.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.config.home import (
    DEFAULT_PROFILE,
    PROFILES_DIR,
    ProfileError,
    ensure_home,
    existing_profile_home,
    list_profiles,
    profile_exists,
    profile_home,
    validate_profile_name,
)
from hermes.config.settings import ConfigError, Settings, load_settings
from hermes.fileio import atomic_write

SEED_FILES = ("config.yaml", "SOUL.md")
SEED_DIRS = ("skills",)
NEVER_COPIED = (".env", "logs", "workspace", "cache", PROFILES_DIR, "gateway", "cron/output")
"""Secrets, logs, the tool workdir, caches, other profiles, bot state and run outputs stay."""
DATABASE_FILES = ("state.db",)

BOT_CREDENTIALS: dict[str, tuple[str, ...]] = {
    "telegram": ("token",),
    "discord": ("token",),
    "slack": ("bot_token", "app_token"),
    "whatsapp": ("token", "phone_number_id"),
    "sms": ("phone_number",),
    "matrix": ("access_token", "user_id"),
    "mattermost": ("token",),
    "signal": ("number",),
    "email": ("address", "username"),
}
"""Per platform, the settings that name one bot: two profiles may not run the same bot."""


@dataclass(frozen=True)
class ProfileInfo:
    """What `hermes profile list` shows of one profile."""

    name: str
    path: Path
    model: str | None
    has_key: bool
    gateway: list[str]
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "model": self.model,
            "has_key": self.has_key,
            "gateway": self.gateway,
            "error": self.error,
        }


def profile_settings(root: Path, name: str) -> Settings:
    """The settings of an existing profile, as `hermes -p NAME` would load them."""
    return load_settings(home=existing_profile_home(root, name), profile=name)


def bot_identities(settings: Settings) -> dict[tuple[str, str], str]:
    """(platform, setting) -> value for every bot credential these settings configure."""
    found: dict[tuple[str, str], str] = {}
    for platform, keys in BOT_CREDENTIALS.items():
        section = settings.gateway.platform(platform)
        for key in keys:
            value = section.get(key)
            secret = getattr(value, "get_secret_value", None)
            text = str(secret() if callable(secret) else value or "").strip()
            if text:
                found[(platform, key)] = text
    return found


def describe(root: Path, name: str) -> ProfileInfo:
    path = profile_home(root, name)
    try:
        settings = profile_settings(root, name)
    except (ConfigError, ProfileError) as exc:
        return ProfileInfo(name, path, None, False, [], error=str(exc))
    platforms = sorted({platform for platform, _ in bot_identities(settings)})
    return ProfileInfo(
        name, path, settings.model.name, settings.server.api_key is not None, platforms
    )


def describe_all(root: Path) -> list[ProfileInfo]:
    return [describe(root, name) for name in list_profiles(root)]


def _new_home(root: Path, name: str) -> Path:
    if validate_profile_name(name) == DEFAULT_PROFILE or profile_exists(root, name):
        raise ProfileError(f"the profile {name!r} already exists")
    return profile_home(root, name)


def _config_without_secrets(source: Path) -> tuple[bytes | None, list[str]]:
    """config.yaml as it is, or re-written without the keys a profile never shares."""
    if not source.is_file():
        return None, []
    raw = source.read_bytes()
    import yaml  # here: a start with no profile to copy never reads YAML

    try:
        data = yaml.safe_load(raw.decode("utf-8-sig"))
    except (yaml.YAMLError, UnicodeDecodeError):
        raise ProfileError(f"{source} is not valid YAML; fix it before copying it") from None
    if not isinstance(data, dict):
        return raw, []
    dropped = []
    server = data.get("server")
    if isinstance(server, dict) and "api_key" in server:
        del server["api_key"]
        dropped.append("server.api_key")
    if "gateway" in data:
        del data["gateway"]
        dropped.append("gateway")
    if not dropped:
        return raw, []
    return yaml.safe_dump(data, sort_keys=False).encode("utf-8"), dropped


def _copy_database(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite store, even while a server writes to it (WAL)."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    target.chmod(0o600)


@dataclass(frozen=True)
class Created:
    """A new profile's home, what was copied into it and what was left out on purpose."""

    home: Path
    copied: list[str]
    dropped: list[str]


def create(root: Path, name: str, *, source: str | None = None) -> Created:
    """A new profile: empty, or with `source`'s config.yaml, SOUL.md and skills."""
    home = _new_home(root, name)
    origin = existing_profile_home(root, source) if source is not None else None
    ensure_home(home)
    copied: list[str] = []
    dropped: list[str] = []
    if origin is None:
        return Created(home, copied, dropped)
    config, dropped = _config_without_secrets(origin / "config.yaml")
    if config is not None:
        atomic_write(home / "config.yaml", config)
        copied.append("config.yaml")
    for name_ in SEED_FILES[1:]:
        if (origin / name_).is_file():
            shutil.copy2(origin / name_, home / name_)
            copied.append(name_)
    for directory in SEED_DIRS:
        if (origin / directory).is_dir():
            shutil.copytree(origin / directory, home / directory, dirs_exist_ok=True)
            copied.append(directory + "/")
    return Created(home, copied, dropped)


def copy(root: Path, source: str, name: str) -> Created:
    """A full clone of `source` (notes, users, skills, jobs, SQLite sessions), secrets aside."""
    home = _new_home(root, name)
    origin = existing_profile_home(root, source)
    ensure_home(home)
    skip = {origin / entry for entry in (*NEVER_COPIED, "config.yaml", *DATABASE_FILES)}
    copied: list[str] = []

    def ignore(directory: str, names: list[str]) -> set[str]:
        here = Path(directory)
        return {
            n
            for n in names
            if here / n in skip
            or n.endswith((".lock", "-wal", "-shm"))
            or (n.startswith("state.db") and here == origin)
        }

    for entry in sorted(origin.iterdir()):
        if entry in skip or entry.name.endswith((".lock", "-wal", "-shm")):
            continue
        if entry.name.startswith("state.db"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, home / entry.name, ignore=ignore, dirs_exist_ok=True)
        else:
            shutil.copy2(entry, home / entry.name)
        copied.append(entry.name + ("/" if entry.is_dir() else ""))
    config, dropped = _config_without_secrets(origin / "config.yaml")
    if config is not None:
        atomic_write(home / "config.yaml", config)
        copied.append("config.yaml")
    for db in DATABASE_FILES:
        if (origin / db).is_file():
            _copy_database(origin / db, home / db)
            copied.append(db)
    return Created(home, sorted(copied), dropped)


def delete(root: Path, name: str) -> Path:
    """Remove a named profile's home (everything in it); the default profile is refused."""
    if validate_profile_name(name) == DEFAULT_PROFILE:
        raise ProfileError("the default profile is the root HERMES_HOME and cannot be deleted")
    home = existing_profile_home(root, name)
    shutil.rmtree(home)
    return home


def bot_conflicts(root: Path, only: str | None = None, *, own: Settings | None = None) -> list[str]:
    """Each bot belongs to one profile: a sentence per bot credential that two profiles set
    (only those involving profile `only` when given; `own` stands for the settings that
    profile is running with, e.g. the default profile's, environment included)."""
    identities: dict[str, dict[tuple[str, str], str]] = {}
    for name in list_profiles(root):
        if own is not None and name == own.profile:
            identities[name] = bot_identities(own)
            continue
        try:
            identities[name] = bot_identities(profile_settings(root, name))
        except (ConfigError, ProfileError):
            continue
    owners: dict[tuple[str, str, str], list[str]] = {}
    for name, found in identities.items():
        for (platform, key), value in found.items():
            owners.setdefault((platform, key, value), []).append(name)
    problems = []
    for (platform, key, _), names in sorted(owners.items()):
        if len(names) > 1 and (only is None or only in names):
            listed = " and ".join(repr(n) for n in names)
            problems.append(
                f"the same {platform} bot (gateway.{platform}.{key}) is configured in the "
                f"profiles {listed}; a bot belongs to one profile: remove it from all but one"
            )
    return problems
