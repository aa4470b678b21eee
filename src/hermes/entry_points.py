"""Installed distributions' entry points, read once at start for both of their readers.

pydantic looks for its plugins (group `pydantic`) the first time it builds a model, and Hermes
for its own (`hermes.plugins`) when the registry loads; each look-up reads the metadata of every
installed distribution (hundreds of files, ~15 ms). A command reads them once (`prime`): when no
distribution offers a pydantic plugin, pydantic's loader is told it has none, which is what its
own scan would conclude, and the registry's first look-up takes the same read.
"""

from __future__ import annotations

import os
from importlib.metadata import EntryPoints, entry_points
from typing import Protocol


class _Scan(Protocol):  # what entry_points() returns: EntryPoints, or SelectableGroups (3.11)
    def select(self, *, group: str) -> EntryPoints: ...


_scan: _Scan | None = None


def prime() -> None:
    """Read every entry point once, before the first pydantic model of the process."""
    global _scan
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS"):
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # another pydantic: it scans on its own, as before
        return
    if getattr(_loader, "_plugins", ()) is not None:
        return  # already loaded (or no such cache in this pydantic)
    scan = entry_points()
    if not scan.select(group=_loader.PYDANTIC_ENTRY_POINT_GROUP):
        _loader._plugins = {}
    _scan = scan


def select(group: str) -> EntryPoints:
    """The entry points of `group`: from `prime`'s read the first time, read afresh after (a
    command that installs a plugin sees it)."""
    global _scan
    scan, _scan = _scan, None
    if scan is None:
        scan = entry_points()
    return scan.select(group=group)
