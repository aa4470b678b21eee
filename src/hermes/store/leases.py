"""Who holds a lease, and whether that holder is still alive.

A lease row names its holder as `hermes:<host>:<pid>:<start>:<nonce>` (`start` is the
process's start time in clock ticks since boot on Linux, else 0). A process that dies holding
a lease (SIGKILL, OOM, a closed terminal) never releases it; rather than leave the session
locked until the row expires, every backend asks `holder_is_dead` when it finds a live row:

* same host: the holder is dead when its PID is gone, or belongs to a newer process (the
  start time differs: the PID was reused, e.g. PID 1 again after a container restart);
* another host: nothing can be checked from here, so the row's short expiry decides; the
  holder renews it (`Store.renew_lock`) every `HEARTBEAT_SECONDS` while its turn runs.

Holders written by older versions (any other shape) are judged by expiry alone.
"""

from __future__ import annotations

import os
import socket
import uuid
from functools import cache

LEASE_SECONDS = 30.0
"""How long a lease lives without a heartbeat: the wait when a holder on another host dies."""
HEARTBEAT_SECONDS = LEASE_SECONDS / 3


@cache
def _host() -> str:
    return socket.gethostname().replace(":", "_") or "localhost"


def _start_ticks(pid: int) -> str:
    """The process's start time (field 22 of /proc/<pid>/stat), or '' when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may hold spaces
    return fields[19] if len(fields) > 19 else ""


@cache
def _process_prefix(pid: int) -> str:
    return f"hermes:{_host()}:{pid}:{_start_ticks(pid) or '0'}"


def new_holder() -> str:
    """A holder name for this process (unique per call)."""
    return f"{_process_prefix(os.getpid())}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return True
    return True


def holder_is_dead(holder: str) -> bool:
    """True only when the holder certainly no longer runs (same host, PID gone or reused)."""
    parts = holder.split(":")
    if len(parts) != 5 or parts[0] != "hermes" or parts[1] != _host():
        return False
    pid_text, start = parts[2], parts[3]
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    # (this very process counts as alive: another runtime in it may hold the lease)
    if pid != os.getpid() and not _pid_alive(pid):
        return True
    now_start = _start_ticks(pid)
    return bool(start != "0" and now_start and now_start != start)
