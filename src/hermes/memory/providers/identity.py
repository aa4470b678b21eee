"""Which provider-side user (Honcho peer, Mem0 user_id, Supermemory namespace) a Hermes scope
is. The owner's default scope is `owner`; the end user `X-Hermes-User-Id: 42` (scope `user:42`)
is `user-42`, the id the operator knows them by. Characters the services do not accept in ids
are escaped injectively, so two scopes never map to one id."""

from __future__ import annotations

import re

from hermes.scopes import user_of_scope
from hermes.store.base import DEFAULT_SCOPE

OWNER = "owner"
OTHER = "scope-"  # a scope that is neither the owner's nor an end user's (none is made today)
_KEEP = re.compile(r"[A-Za-z0-9-]")


def safe_id(text: str) -> str:
    """`text` with every character but letters, digits and `-` escaped as `_xx` (injective)."""
    return "".join(
        ch if _KEEP.fullmatch(ch) else "".join(f"_{b:02x}" for b in ch.encode()) for ch in text
    )


def provider_user(scope: str, prefix: str = "") -> str:
    """The id of `scope` at the provider, optionally under a per-install `prefix`."""
    user = user_of_scope(scope)
    if scope == DEFAULT_SCOPE:
        name = OWNER
    elif user is not None:
        name = "user-" + safe_id(user)
    else:
        name = OTHER + safe_id(scope)
    return f"{prefix}-{name}" if prefix else name
