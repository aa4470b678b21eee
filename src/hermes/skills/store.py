"""Where a runtime's skills live, and the scope rule: one library, the owner's.

Skills are procedures the owner curates (by hand or through the agent). End users (API
`X-Hermes-User-Id`, non-owner gateway identities) read the owner's skills, so every user
benefits from them, but never write them: `skill_manage` refuses outside the owner scope, and
the background review only learns from the owner's own sessions, so a stranger's
conversation cannot plant instructions in a prompt the owner will later run.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from hermes.config.settings import Settings
from hermes.skills.library import SkillLibrary
from hermes.skills.starters import install_starters
from hermes.store.base import DEFAULT_SCOPE

log = logging.getLogger(__name__)

_started: set[Path] = set()
_started_lock = threading.Lock()


def skills_root(settings: Settings) -> Path:
    return settings.home / "skills"


def library_for(settings: Settings) -> SkillLibrary:
    """The owner's library; copies the starter skills the first time a process uses it."""
    root = skills_root(settings)
    if settings.skills.starters:
        with _started_lock:
            if root not in _started:
                try:
                    install_starters(root)
                except OSError as exc:
                    log.warning("starter skills could not be installed in %s: %s", root, exc)
                _started.add(root)
    return SkillLibrary(root)


def can_write(scope: str) -> bool:
    return scope == DEFAULT_SCOPE
