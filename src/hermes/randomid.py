"""Random ids for the per-turn path: version-4 UUIDs in hex, without a `uuid.UUID` object and
without a system call per id.

`os.urandom` gives up the GIL around its `getrandom` call. On the event loop that is a hand-off:
a busy worker thread (the store's writer, the indexer) takes the GIL and the loop waits for it
to come back, up to the interpreter's switch interval, in the middle of a turn. Three ids a
turn made that the loop's largest wait (`bench/profile_api.py`). So each thread draws its ids
from a block of kernel randomness fetched once per `_IDS_PER_FETCH` ids; every id is still 122
bits from the kernel's CSPRNG, never derived from another.
"""

from __future__ import annotations

import os
import threading

_IDS_PER_FETCH = 256
_ID_BYTES = 16


class _Block(threading.local):
    """One thread's unused randomness (per thread: no lock, and no id given out twice)."""

    data: bytes = b""
    at: int = 0


_block = _Block()


def _forget_in_child() -> None:
    """A forked child must not hand out the ids its parent will."""
    global _block
    _block = _Block()


os.register_at_fork(after_in_child=_forget_in_child)


def uuid4_hex() -> str:
    """What `uuid.uuid4().hex` gives: version 4, RFC 4122 variant, 32 lowercase hex digits."""
    block = _block
    at = block.at
    if at + _ID_BYTES > len(block.data):
        block.data, at = os.urandom(_ID_BYTES * _IDS_PER_FETCH), 0
    raw = bytearray(block.data[at : at + _ID_BYTES])
    block.at = at + _ID_BYTES
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    return raw.hex()
