"""Where file and terminal tools work, and the rule that keeps them there (SPEC §4, §11)."""

from __future__ import annotations

import os
from pathlib import Path

from hermes.config.settings import Settings
from hermes.tools.registry import ToolError

# Files inside HERMES_HOME the agent must never write: its own settings, secrets, approvals
# ("always" answers) and the database.
_PROTECTED = (".env", "config.yaml", "approvals.json", "state.db", "state.db-wal", "state.db-shm")


def workdir(settings: Settings) -> Path:
    """`tools.workdir` / HERMES_WORKDIR, else `$HERMES_HOME/workspace` (`hermes chat` sets
    its own current directory before building the runtime). Created when missing."""
    configured = settings.tools.workdir
    root = Path(os.path.expanduser(configured)) if configured else settings.home / "workspace"
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def confine(settings: Settings, path: str) -> Path:
    """The absolute, symlink-resolved path `path` names (relative to the workdir); refused when
    it leaves the workdir, unless `tools.files.allow_outside_workdir` is true."""
    if not path or not path.strip():
        raise ToolError("the path is empty; give a path relative to the working directory")
    if "\x00" in path:
        raise ToolError("the path contains a NUL character")
    root = workdir(settings)
    candidate = Path(os.path.expanduser(path.strip()))
    resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if not settings.tools.files.allow_outside_workdir and not resolved.is_relative_to(root):
        raise ToolError(
            f"{path!r} is outside the working directory {root} (after following '..' and "
            "symlinks); only files inside it may be used (the owner can set "
            "tools.files.allow_outside_workdir: true)"
        )
    return resolved


def confine_for_write(settings: Settings, path: str) -> Path:
    """`confine`, and never one of Hermes' own settings, secrets or database files."""
    resolved = confine(settings, path)
    home = settings.home.resolve()
    if resolved.parent == home and resolved.name in _PROTECTED:
        raise ToolError(f"{path!r} is one of Hermes' own settings files; it is never written")
    return resolved


def display(settings: Settings, path: Path) -> str:
    """The path as the model should write it next time: relative to the workdir when inside."""
    root = workdir(settings)
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
