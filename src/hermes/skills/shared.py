"""Skills the owner's agent writes, shared by every replica of a PostgreSQL deployment.

The library stays a directory of files (skills are read, listed, and their scripts run by
path), but when the store is shared a skill written through `hermes.skills.manage` (the
agent's `skill_manage`, `PUT /api/skills`, the background review) is also published to the
store: each of its text files as a document `skills/<path>` of the owner scope, listed with
its digest in the document `skills/.manifest.json`. Every replica pulls what changed into its
own directory before it reads the library (at most once a second), and removes what another
replica deleted. The store is the truth; each replica's files are a copy of it.

What an operator ships as files (the starter skills, `hermes skills install` on a machine)
stays files: it is not published, and every replica is expected to ship the same. Binary
supporting files (not UTF-8) are not published.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from hermes.fileio import atomic_write, file_lock
from hermes.skills.library import confined
from hermes.store.base import DEFAULT_SCOPE, DocumentStore
from hermes.text import string_map

log = logging.getLogger(__name__)

PREFIX = "skills/"
MANIFEST = "skills/.manifest.json"
LOCAL_STATE = ".shared.json"
"""Under the skills directory: what this replica last copied from the store (path → digest)."""
PULL_SECONDS = 1.0


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _mode(relative: str) -> int:
    return 0o700 if "/scripts/" in f"/{relative}" else 0o600


class SharedSkills:
    """The link between one skills directory and the store's copy of its written skills."""

    def __init__(self, documents: DocumentStore, root: Path) -> None:
        self.documents = documents
        self.root = root
        self._lock = threading.Lock()
        self._pulled_at = float("-inf")

    # -- this replica's writes ------------------------------------------------------------

    def publish(self, directory: Path) -> None:
        """Make the store's copy of the skill in `directory` match its files (gone: deleted).
        Called by `manage` under the library's lock (which `pull` also takes), after the
        files are written."""
        base = directory.relative_to(self.root).as_posix()
        files: dict[str, str] = {}
        if directory.is_dir():
            for path in sorted(directory.rglob("*")):
                rel = path.relative_to(self.root).as_posix()
                if not path.is_file() or any(p.startswith(".") for p in rel.split("/")):
                    continue
                try:
                    files[rel] = path.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    log.info("skills: %s is not text; it stays on this replica only", rel)
        with self.documents.edit_document(DEFAULT_SCOPE, MANIFEST) as edit:
            assert edit is not None
            manifest = string_map(edit.text)
            before = {k for k in manifest if k == base or k.startswith(base + "/")}
            for rel, text in files.items():
                if manifest.get(rel) != digest(text):
                    with self.documents.edit_document(DEFAULT_SCOPE, PREFIX + rel) as doc:
                        assert doc is not None
                        doc.new_text = text
            gone = sorted(before - files.keys())
            if gone:
                self.documents.delete_documents(DEFAULT_SCOPE, [PREFIX + rel for rel in gone])
            for rel in gone:
                manifest.pop(rel, None)
            manifest.update({rel: digest(text) for rel, text in files.items()})
            edit.new_text = json.dumps(manifest, sort_keys=True)
            local = string_map(self._read_local())
            for rel in before:
                local.pop(rel, None)
            local.update({rel: digest(text) for rel, text in files.items()})
            self._write_local(local)

    # -- other replicas' writes -----------------------------------------------------------

    def pull(self, *, now: float | None = None) -> None:
        """Copy into the directory what changed in the store since the last pull (at most
        once every `PULL_SECONDS`); a failure is logged and the files stay as they are."""
        moment = time.monotonic() if now is None else now
        with self._lock:
            if moment - self._pulled_at < PULL_SECONDS:
                return
            self._pulled_at = moment
        try:
            with file_lock(self.root / ".lock"):  # the lock `manage` writes under
                self._pull()
        except Exception as exc:
            log.warning("skills: could not read the shared skills (%s); using the files", exc)

    def _pull(self) -> None:
        manifest = string_map(self.documents.read_document(DEFAULT_SCOPE, MANIFEST))
        local = string_map(self._read_local())
        changed = False
        for rel, want in manifest.items():
            try:
                path = confined(self.root, rel)
            except ValueError:
                log.warning("skills: ignoring the shared file %r (outside the library)", rel)
                continue
            if local.get(rel) == want and path.is_file():
                continue
            text = self.documents.read_document(DEFAULT_SCOPE, PREFIX + rel)
            if text is None:
                continue
            atomic_write(path, text, mode=_mode(rel))
            local[rel], changed = digest(text), True
        for rel in sorted(set(local) - manifest.keys()):
            local.pop(rel)
            changed = True
            try:
                path = confined(self.root, rel)
            except ValueError:
                continue
            path.unlink(missing_ok=True)
            self._prune(path.parent)
        if changed:
            self._write_local(local)

    def _prune(self, directory: Path) -> None:
        """Remove directories a deletion left empty, up to the library's root."""
        while directory != self.root and directory.is_relative_to(self.root):
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    def _read_local(self) -> str | None:
        try:
            return (self.root / LOCAL_STATE).read_text(encoding="utf-8")
        except OSError:
            return None

    def _write_local(self, local: dict[str, Any]) -> None:
        atomic_write(self.root / LOCAL_STATE, json.dumps(local, sort_keys=True))
