"""Where a runtime's skills live, and the scope rule: one library, the owner's.

Skills are procedures the owner curates (by hand or through the agent). End users (API
`X-Hermes-User-Id`, non-owner gateway identities) read the owner's skills, so every user
benefits from them, but never write them: `skill_manage` refuses outside the owner scope, and
the background review only learns from the owner's own sessions, so a stranger's
conversation cannot plant instructions in a prompt the owner will later run.

On PostgreSQL the skills the agent writes are shared by every replica (`skills.shared`).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.config.settings import Settings
from hermes.skills.library import SkillLibrary
from hermes.skills.shared import SharedSkills
from hermes.skills.starters import install_starters
from hermes.store.base import DEFAULT_SCOPE

if TYPE_CHECKING:
    from hermes.runtime import Runtime

log = logging.getLogger(__name__)

_started: set[Path] = set()
_shared: dict[Path, SharedSkills] = {}
_started_lock = threading.Lock()


def skills_root(settings: Settings) -> Path:
    return settings.home / "skills"


def library_for(settings: Settings) -> SkillLibrary:
    """The owner's library; copies the starter skills the first time a process uses it.
    With a shared store (PostgreSQL), first brings in what other replicas wrote."""
    root = skills_root(settings)
    if settings.skills.starters:
        with _started_lock:
            if root not in _started:
                try:
                    install_starters(root)
                except OSError as exc:
                    log.warning("starter skills could not be installed in %s: %s", root, exc)
                _started.add(root)
    shared = _shared.get(root)
    if shared is None:
        return SkillLibrary(root)
    shared.pull()
    return SkillLibrary(root, shared.publish)


class SkillSharing:
    """The runtime's component that links its skills directory to a shared store while the
    runtime is open (a process may hold runtimes of several homes)."""

    def __init__(self, runtime: Runtime) -> None:
        self.root: Path | None = None
        documents = runtime.store.documents
        if documents is not None:
            self.root = skills_root(runtime.settings)
            _shared[self.root] = SharedSkills(documents, self.root)

    async def aclose(self) -> None:
        if self.root is not None:
            _shared.pop(self.root, None)


def can_write(scope: str) -> bool:
    return scope == DEFAULT_SCOPE
