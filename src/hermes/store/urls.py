"""Database URLs: which backend a `store.url` names, and how to show one without its password.

`sqlite:///<path>` is a file (the path after `sqlite://`, so `sqlite:////srv/h/state.db` and
`sqlite:///srv/h/state.db` both mean `/srv/h/state.db`; a relative path is taken from
`$HERMES_HOME`). `postgresql://user@host:port/db?…` (or `postgres://`) is a shared database
in libpq's URL syntax.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from hermes.store.base import StoreError

Backend = Literal["sqlite", "postgresql"]


def backend_of(url: str) -> Backend:
    if url.startswith("sqlite://"):
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    raise StoreError(
        f"{redact(url)!r} is not a database URL Hermes can use; write sqlite:///<path> "
        "or postgresql://user@host:port/database"
    )


def sqlite_path(url: str, home: Path | None = None) -> Path:
    """The file a `sqlite://` URL names (relative paths are taken from `home`)."""
    raw = url.removeprefix("sqlite://")
    if not raw or raw == "/":
        raise StoreError(f"{url!r} names no file; write sqlite:///<path to state.db>")
    path = Path(raw.split("?", 1)[0])
    if path.is_absolute():
        return Path("/" + str(path).lstrip("/"))
    return (home or Path.cwd()) / path


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{str(path).lstrip('/')}" if path.is_absolute() else f"sqlite://{path}"


def redact(url: str) -> str:
    """The URL with any password replaced by `***` (safe for logs, /health and errors)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable database URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))
