"""Keep the C allocator's freed memory for the next turn instead of handing it back to the kernel.

A turn deep into a session builds its model request as a few strings of a hundred kilobytes
and more (the history's JSON, its bytes, the head joined on). glibc serves a block that large
with a fresh `mmap`, or from the top of the heap, and gives it back to the kernel when it is
freed: the next turn then faults every page of it in again, and the kernel zeroes each one.
That cost grows with the session, not with the work. With the two thresholds raised, freed
blocks of up to `MMAP_THRESHOLD` stay in the heap and are reused; the heap keeps at most
`TRIM_THRESHOLD` of free memory at its top. docs/perf/README.md, Round 12, has the figures.

An operator's own tuning wins: glibc's `MALLOC_*_` variables or `GLIBC_TUNABLES` naming a
malloc setting leave the allocator as they set it. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""mallopt's parameter numbers (glibc's malloc.h)."""

MMAP_THRESHOLD = 8 * 1024 * 1024
"""Blocks smaller than this come from the heap, to be reused once freed (glibc allows 32 MiB)."""
TRIM_THRESHOLD = 16 * 1024 * 1024
"""Free memory at the heap's top kept for reuse before any is given back."""

OPERATOR_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def operator_tuned(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether whoever started the process already tuned these thresholds."""
    if any(name in environ for name in OPERATOR_SETTINGS):
        return True
    return "glibc.malloc." in environ.get("GLIBC_TUNABLES", "")


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process; True when they were set.

    Called once by the long-running commands (`hermes serve`, `hermes chat`) before they
    serve; the thresholds hold for every thread's arena from then on."""
    if not sys.platform.startswith("linux") or operator_tuned():
        return False
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    # glibc only: musl has a mallopt that does nothing
    if not (hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version")):
        return False
    mallopt = libc.mallopt
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
