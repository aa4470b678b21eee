"""Starter skills shipped with Hermes, copied into `skills/` on first use.

`skills/.bundled_manifest` lists what was copied, so a starter is copied once: a user who
edits it keeps the edit, and one who deletes it does not get it back on the next start.
"""

from __future__ import annotations

import json
import logging
from importlib import resources
from pathlib import Path

from hermes.fileio import atomic_write
from hermes.skills.library import SKILL_FILE

log = logging.getLogger(__name__)

MANIFEST = ".bundled_manifest"


def _starter_dirs() -> list[tuple[str, Path]]:
    """(category/name, directory) of every packaged starter."""
    root = Path(str(resources.files("hermes.skills") / "starters"))
    if not root.is_dir():
        return []
    return [
        (f"{p.parent.parent.name}/{p.parent.name}", p.parent)
        for p in sorted(root.glob(f"*/*/{SKILL_FILE}"))
    ]


def _read_manifest(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    copied = data.get("copied") if isinstance(data, dict) else None
    return [x for x in copied if isinstance(x, str)] if isinstance(copied, list) else []


def _copy(source: Path, target: Path) -> None:
    for path in sorted(source.rglob("*")):
        if path.is_file():
            atomic_write(target / path.relative_to(source), path.read_bytes())


def install_starters(skills_root: Path) -> list[str]:
    """Copy the starters not copied before; returns the ones copied now. Never overwrites."""
    from hermes.skills.manage import locked

    manifest = skills_root / MANIFEST
    with locked(skills_root):
        done = _read_manifest(manifest)
        copied: list[str] = []
        for key, source in _starter_dirs():
            if key in done:
                continue
            target = skills_root / key
            if not target.exists() and not any(skills_root.glob(f"*/{source.name}/{SKILL_FILE}")):
                try:
                    _copy(source, target)
                except OSError as exc:
                    log.warning("starter skill %s could not be copied: %s", key, exc)
                    continue
                copied.append(key)
            done.append(key)
        if copied or not manifest.exists():
            atomic_write(manifest, json.dumps({"copied": done}, indent=2) + "\n")
    return copied
