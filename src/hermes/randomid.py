"""Random ids for the per-turn path, without building a `uuid.UUID` each time."""

from __future__ import annotations

import os


def uuid4_hex() -> str:
    """What `uuid.uuid4().hex` gives (version 4, RFC 4122 variant, 32 lowercase hex digits):
    a request id, a turn's run id and a completion id are made on every turn, and the
    `UUID` object in between was most of their cost."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    return raw.hex()
