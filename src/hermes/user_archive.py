"""One zip of everything Hermes holds of an end user (`GET /api/users/{id}/export`,
`hermes users export`): what a person asking "what do you keep about me?" is owed.

    user.json          who, when, and what the archive holds (counts)
    sessions.jsonl     every session, in the format of `hermes sessions export`
    keys.json          their scoped API keys (ids, labels, dates; never a secret or hash)
    files/...          their directory (users/<dir>/: notes, cron jobs and run outputs),
                       or, with PostgreSQL, the same as database documents

Only regular files under the user's own directory are read; symbolic links are skipped, so
a link planted there cannot pull in another file of the machine.
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from pathlib import Path
from typing import IO, Any

from hermes.config.settings import Settings
from hermes.scopes import scope_for_user, scope_root
from hermes.store.api_keys import ApiKeyStore
from hermes.store.base import Store
from hermes.store.transfer import export_sessions


def write_archive(settings: Settings, store: Store, user: str, out: IO[bytes]) -> dict[str, Any]:
    """Write the user's zip to `out` (blocking); returns what `user.json` says."""
    scope = scope_for_user(user)
    counts = {"sessions": 0, "keys": 0, "files": 0}
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("sessions.jsonl", "w") as fh:
            for line in export_sessions(store, scope):
                fh.write(line.encode("utf-8") + b"\n")
                counts["sessions"] += 1
        keys = (
            [r.as_dict() for r in store.list_api_keys() if r.user == user]
            if isinstance(store, ApiKeyStore)
            else []
        )
        counts["keys"] = len(keys)
        zf.writestr("keys.json", json.dumps(keys, indent=1))
        for name, data in _files(settings, store, scope):
            zf.writestr(f"files/{name}", data)
            counts["files"] += 1
        about = {"user": user, "scope": scope, "exported_at": time.time(), **counts}
        zf.writestr("user.json", json.dumps(about, indent=1))
    return about


def _files(settings: Settings, store: Store, scope: str) -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    documents = store.documents
    if documents is not None:
        for name in documents.list_documents(scope, ""):
            text = documents.read_document(scope, name)
            if text is not None:
                found.append((name, text.encode("utf-8")))
    root = scope_root(settings.home, scope)
    if root == settings.home:  # the owner's scope is the whole home: never archived here
        return found
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file() or name.endswith(".lock"):
                continue
            try:
                found.append((path.relative_to(root).as_posix(), path.read_bytes()))
            except OSError:
                continue  # removed meanwhile, or unreadable: the rest is still worth having
    return found
