"""Names for new chat sessions, in a module of their own: `hermes chat -q` needs one without
loading the terminal UI (rich and Markdown rendering, ~0.15 s)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime


def new_session_id() -> str:
    """A sortable, unique-enough name: `20300107_080000_3f2a9c`."""
    return f"{datetime.now(UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"
