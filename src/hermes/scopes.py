"""Scopes name whose memory it is; ids from users are validated here, once, for every surface."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from hermes.errors import HermesError

DEFAULT_SCOPE = "default"
"""The scope when none is named: the install owner's."""
ID_PATTERN = re.compile(r"^[A-Za-z0-9._:/@-]{1,256}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
USER_SCOPE_PREFIX = "user:"


class InvalidIdError(HermesError, ValueError):
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


class ScopeConflictError(HermesError, ValueError):
    """A namespaced session id claims a different scope than the one the caller named."""


def session_scope(session_id: str, namespaces: Sequence[str]) -> str | None:
    """The scope a namespaced session id claims under `server.session_scopes`, or None.

    `user:<id>` gets exactly the scope `X-Hermes-User-Id: <id>` would; another listed
    namespace `ns:<rest>` gets the scope of the user id `ns:<rest>` (the whole session id),
    so namespaces never share a brain: `team:7` is not `user:7`. An empty remainder claims
    nothing, and neither does a namespace that is not listed.
    """
    namespace, sep, rest = session_id.partition(":")
    if not sep or not rest or namespace not in namespaces:
        return None
    return scope_for_user(rest if namespace == "user" else session_id)


def resolve_scope(scope: str, session_id: str | None, namespaces: Sequence[str]) -> str:
    """Combine the scope the caller named (server key, `X-Hermes-User-Id`) with the one its
    session id claims. One rule for every surface, so a per-session brain is the same brain
    whether a turn, a job or a search asks for it.

    The default scope adopts the session's scope (that is the opt-in); an end-user scope
    must agree with it, or the request names two brains at once and is refused.
    """
    if session_id is None or not namespaces:
        return scope
    claimed = session_scope(validate_id(session_id, what="session id"), namespaces)
    if claimed is None or claimed == scope:
        return scope
    if scope == DEFAULT_SCOPE:
        return claimed
    raise ScopeConflictError(
        f"session id {session_id!r} belongs to the user {user_of_scope(claimed)!r} "
        f"(server.session_scopes), but the request names the user {user_of_scope(scope)!r}; "
        "send one of them, or the same user in both"
    )


def user_of_scope(scope: str) -> str | None:
    return scope[len(USER_SCOPE_PREFIX) :] if scope.startswith(USER_SCOPE_PREFIX) else None


_PLAIN_DIRNAME = re.compile(r"^[a-z0-9_@][a-z0-9._@-]{0,63}$")
_HASHED_SUFFIX = re.compile(r"-[0-9a-f]{12}$")


def _hashed_dirname(scope: str) -> str:
    """Readable slug plus a hash of the scope: safe for any id (the layout before plain names)."""
    user = user_of_scope(scope) or scope
    slug = re.sub(r"[^A-Za-z0-9_-]", "_", user)[:48].strip("_") or "user"
    digest = hashlib.sha256(scope.encode("utf-8")).hexdigest()[:12]
    return f"{slug}-{digest}"


def scope_dirname(scope: str) -> str:
    """The directory of a user scope under `users/`: the user id itself (SPEC §3
    `users/<scope>/`) when it is a safe file name on every file system (lower case, no `/` or
    `:`, no leading dot, at most 64 characters); any other id gets a slug plus a hash, so
    `Alice` and `alice` never share a folder where names ignore case. A plain name never ends
    like a hashed one, so no id can pick another user's folder."""
    user = user_of_scope(scope)
    if user is not None and _PLAIN_DIRNAME.match(user) and not _HASHED_SUFFIX.search(user):
        return user
    return _hashed_dirname(scope)


def scope_root(home: Path, scope: str) -> Path:
    """Where a scope's files live: HERMES_HOME itself for the default scope, else
    users/<dir>. A folder made by an earlier version (slug plus hash) keeps being used."""
    if scope == DEFAULT_SCOPE:
        return home
    users = home / "users"
    name = scope_dirname(scope)
    legacy = _hashed_dirname(scope)
    if name != legacy and not (users / name).exists() and (users / legacy).is_dir():
        return users / legacy
    return users / name


def scope_folders(home: Path, scope: str) -> list[Path]:
    """Every folder under `users/` that may hold this scope's files (the current one and an
    earlier version's), so forgetting a user leaves none behind."""
    if scope == DEFAULT_SCOPE:
        return []
    users = home / "users"
    return sorted({users / scope_dirname(scope), users / _hashed_dirname(scope)})
