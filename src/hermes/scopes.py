"""Scopes name whose memory it is; ids from users are validated here, once, for every surface."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from hermes.store.base import DEFAULT_SCOPE

ID_PATTERN = re.compile(r"^[A-Za-z0-9._:/@-]{1,256}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
USER_SCOPE_PREFIX = "user:"


class InvalidIdError(ValueError):
    """An id from outside broke the character or length rules; the message says which."""


def validate_id(value: str, *, what: str = "session id") -> str:
    if _CONTROL.search(value):
        raise InvalidIdError(f"{what} contains control characters")
    if not value:
        raise InvalidIdError(f"{what} is empty")
    if len(value) > 256:
        raise InvalidIdError(f"{what} is {len(value)} characters long; the limit is 256")
    if not ID_PATTERN.match(value):
        raise InvalidIdError(f"{what} {value!r} may only use letters, digits and . _ : / @ -")
    return value


def scope_for_user(user_id: str | None) -> str:
    """The store scope of an end user; None means the owner's default scope."""
    if user_id is None:
        return DEFAULT_SCOPE
    return USER_SCOPE_PREFIX + validate_id(user_id, what="user id")


def user_of_scope(scope: str) -> str | None:
    return scope[len(USER_SCOPE_PREFIX) :] if scope.startswith(USER_SCOPE_PREFIX) else None


def scope_dirname(scope: str) -> str:
    """A directory name for a user scope: readable, path-safe, and collision-free via a hash."""
    user = user_of_scope(scope) or scope
    slug = re.sub(r"[^A-Za-z0-9_-]", "_", user)[:48].strip("_") or "user"
    digest = hashlib.sha256(scope.encode("utf-8")).hexdigest()[:12]
    return f"{slug}-{digest}"


def scope_root(home: Path, scope: str) -> Path:
    """Where a scope's files live: HERMES_HOME itself for the default scope, else users/<dir>."""
    if scope == DEFAULT_SCOPE:
        return home
    return home / "users" / scope_dirname(scope)
