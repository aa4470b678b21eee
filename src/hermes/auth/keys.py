"""Scoped API keys: `hk_<id>_<secret>`, each bound to one end user's scope.

An app hands each of its end users their own key; requests made with it act as that user
(as `X-Hermes-User-Id: <user>` would) and cannot name another user. Only a SHA-256 of the
secret is stored: the secrets are 32 random bytes, so a fast hash is enough (a slow password
hash protects guessable secrets, which these are not) and lookup stays one indexed read.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
import uuid

from hermes.errors import HermesError
from hermes.scopes import validate_id
from hermes.store.api_keys import ApiKeyRecord, ApiKeyStore
from hermes.store.base import Store

PREFIX = "hk_"
_DURATION = re.compile(r"^\s*(\d+)\s*(m|min|h|d|w|y)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
MAX_EXPIRY_SECONDS = 10 * 365 * 86400


class KeyError_(HermesError):  # noqa: N801 - `KeyError` is a builtin
    """A key operation that cannot be done; the message says why."""


def key_store(store: Store) -> ApiKeyStore:
    """The store's key table, or a clear error for a backend that keeps none (a plugin's)."""
    if not isinstance(store, ApiKeyStore):
        raise KeyError_(
            f"scoped API keys are not kept by the {type(store).__name__} backend; "
            "use SQLite (the default) or PostgreSQL"
        )
    return store


def hash_secret(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_expiry(text: str) -> float:
    """`30d`, `12h`, `90m`, `2w`, `1y` → seconds."""
    match = _DURATION.match(text)
    if not match:
        raise KeyError_(f"--expires {text!r} is not a duration such as 30d, 12h, 90m, 2w or 1y")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
    if not 0 < seconds <= MAX_EXPIRY_SECONDS:
        raise KeyError_(f"--expires {text!r} must be between 1 minute and 10 years")
    return float(seconds)


def create_key(
    store: Store, user: str, *, expires_in: float | None = None, label: str | None = None
) -> tuple[str, ApiKeyRecord]:
    """A new key for `user`; returns the secret (shown once, never stored) and its record."""
    keys = key_store(store)
    validate_id(user, what="user id")
    key_id = uuid.uuid4().hex[:12]
    token = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    now = time.time()
    record = ApiKeyRecord(
        id=key_id,
        user=user,
        label=label,
        created_at=now,
        expires_at=now + expires_in if expires_in else None,
        revoked_at=None,
    )
    keys.add_api_key(record, hash_secret(token))
    return token, record


def looks_scoped(token: str) -> bool:
    return token.startswith(PREFIX)


def verify(store: Store, token: str) -> ApiKeyRecord | None:
    """The usable key this token is, or None (unknown, revoked or expired)."""
    if not looks_scoped(token) or not isinstance(store, ApiKeyStore):
        return None
    record = store.api_key_by_hash(hash_secret(token))
    return record if record is not None and record.usable() else None


def list_keys(store: Store) -> list[ApiKeyRecord]:
    return key_store(store).list_api_keys()


def revoke(store: Store, key_id: str) -> bool:
    return key_store(store).revoke_api_key(key_id)
