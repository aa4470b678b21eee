"""Installed distributions' entry points, read once at start for both of their readers.

pydantic looks for its plugins (group `pydantic`) the first time it builds a model, and Hermes
for its own (`hermes.plugins`) when the registry loads; each look-up parses the entry points of
every installed distribution (hundreds of files). A command reads the files once (`prime`) and
parses none of them: a group no file names as a section (`[pydantic]`, `[hermes.plugins]`) has
no entry points, which is what a full scan would conclude. So pydantic's loader is told it has
no plugins, and the registry's first look-up answers without a scan; a file that names the
group (or anything like it, e.g. an extra called `[pydantic]`) sends the look-up to the full
`importlib.metadata` scan, as before.
"""

from __future__ import annotations

import os
from importlib.metadata import EntryPoints, distributions, entry_points

_texts: list[str] | None = None
"""`prime`'s read: each distribution's entry_points.txt, for the registry's first look-up."""


def _read() -> list[str]:
    return [text for dist in distributions() if (text := dist.read_text("entry_points.txt"))]


def _names(texts: list[str], group: str) -> bool:
    """Whether any file may define `group` (a section header is `[group]` on its own line)."""
    header = f"[{group}]"
    return any(header in text for text in texts)


def prime() -> None:
    """Read every entry point file once, before the first pydantic model of the process."""
    global _texts
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS"):
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # another pydantic: it scans on its own, as before
        return
    if getattr(_loader, "_plugins", ()) is not None:
        return  # already loaded (or no such cache in this pydantic)
    texts = _read()
    if not _names(texts, _loader.PYDANTIC_ENTRY_POINT_GROUP):
        _loader._plugins = {}
    _texts = texts


def select(group: str) -> EntryPoints:
    """The entry points of `group`: the first time from `prime`'s read, read afresh after (a
    command that installs a plugin sees it)."""
    global _texts
    texts, _texts = _texts, None
    if texts is None:
        texts = _read()
    if not _names(texts, group):
        return EntryPoints(())
    return entry_points(group=group)
