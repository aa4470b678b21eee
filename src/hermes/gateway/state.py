"""The gateway's small state: which session each chat is on (`/new` moves a chat to a fresh
one), pairing, and the adapters' status for `hermes gateway status` (which must work without
asking a running server). Embedded (SQLite), these are JSON files under `$HERMES_HOME/gateway/`
written atomically under a lock; with a shared database (PostgreSQL) the same JSON is a
store document, so every replica reads and edits one copy."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes.fileio import atomic_write
from hermes.store.base import DEFAULT_SCOPE, DocumentStore, RecordStore


def gateway_dir(home: Path) -> Path:
    return home / "gateway"


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class SharedJson:
    """One JSON object of gateway state: `gateway/<name>` as a file under the home, or as a
    store document (default scope) when the database is shared by several replicas."""

    def __init__(self, home: Path, name: str, documents: DocumentStore | None = None) -> None:
        self.path = gateway_dir(home) / name
        self.document = f"gateway/{name}"
        self.documents = documents

    def read(self) -> dict[str, Any]:
        if self.documents is None:
            return read_json(self.path)
        return _parse(self.documents.read_document(DEFAULT_SCOPE, self.document))

    def exists(self) -> bool:
        if self.documents is None:
            return self.path.exists()
        return self.documents.read_document(DEFAULT_SCOPE, self.document) is not None

    @contextlib.contextmanager
    def edit(self) -> Iterator[dict[str, Any]]:
        """Read-modify-write under an exclusive lock; written only when it changed."""
        if self.documents is not None:
            with self.documents.edit_document(DEFAULT_SCOPE, self.document) as edit:
                assert edit is not None  # (only `skip_locked` edits come back empty)
                data = _parse(edit.text)
                before = json.dumps(data, sort_keys=True)
                yield data
                if json.dumps(data, sort_keys=True) != before:
                    edit.new_text = json.dumps(data, indent=1, sort_keys=True)
            return
        lock_path = self.path.with_suffix(".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = read_json(self.path)
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _parse(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class ChatSessions:
    """Chat session key → the session id its messages go to. The first session of a chat is
    the key itself; `/new` gives `<key>/<n>`, and the old one stays (and stays searchable).
    Blocking (reads the shared state each time, so a `/new` on one replica holds on all)."""

    def __init__(self, home: Path, documents: DocumentStore | None = None) -> None:
        self.state = SharedJson(home, "sessions.json", documents)
        self._lock = threading.Lock()

    def current(self, scope: str, key: str) -> str:
        found = self.state.read().get(f"{scope}|{key}")
        return found if isinstance(found, str) else key

    def start_new(self, scope: str, key: str) -> str:
        """Point the chat (for this scope) at a fresh session id and persist the choice."""
        with self._lock, self.state.edit() as data:
            current = data.get(f"{scope}|{key}")
            current = current if isinstance(current, str) else key
            _, sep, n = current.rpartition("/")
            number = int(n) + 1 if sep and n.isdigit() and current != key else 2
            fresh = f"{key}/{number}"
            data[f"{scope}|{key}"] = fresh
        return fresh


def forget_chats(home: Path, scope: str, documents: DocumentStore | None = None) -> int:
    """Drop the scope's chat → session entries (`hermes users forget`)."""
    state = SharedJson(home, "sessions.json", documents)
    if not state.exists():
        return 0
    with state.edit() as data:
        mine = [k for k in data if k.startswith(f"{scope}|")]
        for k in mine:
            del data[k]
    return len(mine)


def set_home(home: Path, target: str) -> None:
    """Store `gateway.home` in config.yaml, keeping every other key (atomic write)."""
    import yaml  # here: a `hermes serve` start never writes config.yaml

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


STATUS = "gateway_status"
STATUS_TTL = 60.0
"""A replica's status record lives this long unless rewritten (the runner rewrites it at
least every `STATUS_TTL / 3`): a replica that died drops out of the report by itself."""


def replica_key() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class StatusFile:
    """Adapter status as JSON, rewritten at most once a second (and on state changes), with
    the writer's pid so a reader can tell a live gateway from a stale file. With a shared
    database it is a store record per replica instead (`gateway_status`, expiring)."""

    def __init__(self, home: Path, records: RecordStore | None = None) -> None:
        self.path = gateway_dir(home) / "status.json"
        self.records = records
        self._last = 0.0

    def write(self, adapters: dict[str, dict[str, Any]], *, force: bool = False) -> bool:
        now = time.monotonic()
        if not force and now - self._last < 1.0:
            return False
        self._last = now
        payload = {"pid": os.getpid(), "updated_at": time.time(), "adapters": adapters}
        if self.records is not None:
            self.records.put_record(STATUS, DEFAULT_SCOPE, replica_key(), payload, ttl=STATUS_TTL)
            return True
        atomic_write(self.path, json.dumps(payload, indent=1, sort_keys=True))
        return True

    def clear(self) -> None:
        """Mark the gateway stopped (the file stays, so the last errors remain readable)."""
        if self.records is not None:
            self.records.delete_records(STATUS, DEFAULT_SCOPE, [replica_key()])
            return
        data = read_json(self.path)
        data["pid"] = None
        data["stopped_at"] = time.time()
        for entry in data.get("adapters", {}).values():
            if isinstance(entry, dict):
                entry["connected"] = False
        atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True))

    def replicas(self) -> list[dict[str, Any]]:
        """Every live replica's status (shared database), newest first."""
        if self.records is None:
            return []
        return [r.body for r in self.records.list_records(STATUS, DEFAULT_SCOPE)]


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
