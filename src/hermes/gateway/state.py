"""The gateway's small state files under `$HERMES_HOME/gateway/`: which session each chat is
on (`/new` moves a chat to a fresh one), and the adapters' status for `hermes gateway status`
(which must work without asking a running server). Every write is atomic."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from hermes.fileio import atomic_write


def gateway_dir(home: Path) -> Path:
    return home / "gateway"


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class ChatSessions:
    """Chat session key → the session id its messages go to. The first session of a chat is
    the key itself; `/new` gives `<key>/<n>`, and the old one stays (and stays searchable)."""

    def __init__(self, home: Path) -> None:
        self.path = gateway_dir(home) / "sessions.json"
        self._lock = threading.Lock()
        self._map: dict[str, str] = {
            k: v for k, v in read_json(self.path).items() if isinstance(v, str)
        }

    def current(self, scope: str, key: str) -> str:
        return self._map.get(f"{scope}|{key}", key)

    def start_new(self, scope: str, key: str) -> str:
        """Point the chat (for this scope) at a fresh session id and persist the choice."""
        with self._lock:
            current = self._map.get(f"{scope}|{key}", key)
            _, sep, n = current.rpartition("/")
            number = int(n) + 1 if sep and n.isdigit() and current != key else 2
            fresh = f"{key}/{number}"
            self._map[f"{scope}|{key}"] = fresh
            snapshot = dict(self._map)
        atomic_write(self.path, json.dumps(snapshot, indent=1, sort_keys=True))
        return fresh


def forget_chats(home: Path, scope: str) -> int:
    """Drop the scope's chat → session entries from sessions.json (`hermes users forget`)."""
    path = gateway_dir(home) / "sessions.json"
    data = read_json(path)
    kept = {k: v for k, v in data.items() if not k.startswith(f"{scope}|")}
    if len(kept) != len(data):
        atomic_write(path, json.dumps(kept, indent=1, sort_keys=True))
    return len(data) - len(kept)


def set_home(home: Path, target: str) -> None:
    """Store `gateway.home` in config.yaml, keeping every other key (atomic write)."""
    path = home / "config.yaml"
    data: Any = {}
    if path.exists():
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the top level must be a mapping; fix it by hand first")
    section = data.get("gateway")
    if not isinstance(section, dict):
        section = {}
        data["gateway"] = section
    section["home"] = target
    atomic_write(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


class StatusFile:
    """Adapter status as JSON, rewritten at most once a second (and on state changes), with
    the writer's pid so a reader can tell a live gateway from a stale file."""

    def __init__(self, home: Path) -> None:
        self.path = gateway_dir(home) / "status.json"
        self._last = 0.0

    def write(self, adapters: dict[str, dict[str, Any]], *, force: bool = False) -> bool:
        now = time.monotonic()
        if not force and now - self._last < 1.0:
            return False
        self._last = now
        payload = {"pid": os.getpid(), "updated_at": time.time(), "adapters": adapters}
        atomic_write(self.path, json.dumps(payload, indent=1, sort_keys=True))
        return True

    def clear(self) -> None:
        """Mark the gateway stopped (the file stays, so the last errors remain readable)."""
        data = read_json(self.path)
        data["pid"] = None
        data["stopped_at"] = time.time()
        for entry in data.get("adapters", {}).values():
            if isinstance(entry, dict):
                entry["connected"] = False
        atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True))


def pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
