"""Failures of the machine rather than of the request: a full disk, a damaged database.

They are not bugs, and a client can act on them (retry later, tell the operator), so they get
their own statuses instead of a generic 500: 507 Insufficient Storage for a full disk (with
the path, as PostgreSQL names the file it could not extend), 503 for a damaged `state.db`.
The last disk-full event is remembered so `/health` reports it until a write succeeds again.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.server.errors import SERVER_ERROR, APIError

_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
LOW_DISK_BYTES = 32 * 1024 * 1024
"""Below this much free space (or 5% of a small disk) /health reports the disk degraded."""


@dataclass
class DiskFullEvent:
    path: str
    at: float


last_disk_full: DiskFullEvent | None = None
"""The most recent write refused for lack of space (cleared by `clear_disk_full`)."""


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and all(cause is not s for s in seen):
        seen.append(cause)
        cause = cause.__cause__ or cause.__context__
    return seen


def _disk_full_path(exc: BaseException, home: Path, db_path: str | None) -> str | None:
    for cause in _chain(exc):
        if isinstance(cause, OSError) and cause.errno in _DISK_FULL_ERRNOS:
            return str(cause.filename or home)
        if isinstance(cause, sqlite3.OperationalError) and "full" in str(cause).lower():
            return db_path or str(home / "state.db")
    return None


def _damaged(exc: BaseException) -> str | None:
    for cause in _chain(exc):
        if isinstance(cause, sqlite3.DatabaseError) and not isinstance(
            cause, sqlite3.OperationalError | sqlite3.IntegrityError
        ):
            return str(cause)
        text = str(cause).lower()
        if isinstance(cause, sqlite3.OperationalError) and (
            "malformed" in text or "not a database" in text or "disk i/o error" in text
        ):
            return str(cause)
    return None


def from_fault(exc: BaseException, *, home: Path, db_path: str | None = None) -> APIError | None:
    """The envelope for a machine fault behind `exc`, or None when it is something else."""
    global last_disk_full
    path = _disk_full_path(exc, home, db_path)
    if path is not None:
        last_disk_full = DiskFullEvent(path, time.time())
        return APIError(
            507,
            f"The disk holding {path} is full: Hermes could not save. Nothing already stored "
            "was lost; free some space and retry.",
            SERVER_ERROR,
            "disk_full",
        )
    damage = _damaged(exc)
    if damage is not None:
        return APIError(
            503,
            f"Hermes' state database is damaged ({damage}); the operator should restore it "
            "from a backup or run `hermes doctor`.",
            SERVER_ERROR,
            "store_damaged",
            headers={"Retry-After": "60"},
        )
    return None


def clear_disk_full() -> None:
    global last_disk_full
    last_disk_full = None


def disk_health(home: Path) -> dict[str, Any]:
    """Free space where Hermes writes; `degraded` when nearly full or a write just failed."""
    try:
        usage = shutil.disk_usage(home)
    except OSError as exc:
        return {"status": "degraded", "reason": f"cannot check the disk: {exc.strerror}"}
    low = min(LOW_DISK_BYTES, usage.total // 20)
    report: dict[str, Any] = {"status": "ok", "free_bytes": usage.free}
    event = last_disk_full
    if usage.free <= low:
        report["status"] = "degraded"
        report["reason"] = f"the disk is full or nearly ({usage.free:,} bytes free)"
    elif event is not None and usage.free <= 4 * low:
        report["status"] = "degraded"
        report["reason"] = "a write failed recently because the disk was full"
    elif event is not None:
        clear_disk_full()
    return report
