"""The dashboard's files under a name that changes with their content.

The page names its files `/ui/static/v-<tag>/…`, `<tag>` a digest of every file shipped:
such a URL always means the same bytes, so the browser keeps them for a year and a page
load asks the server for the page and its data only, not ~25 files to revalidate. An
upgrade ships other bytes, hence another tag, and the new page names new URLs. Relative
imports inside the modules resolve under the same tagged folder, so only the page and the
few absolute paths in it carry the tag.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

STATIC = Path(__file__).parent / "static"
PREFIX = "/ui/static/"
FOREVER = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


@cache
def tag() -> str:
    """A digest of every shipped file's path and bytes (read once per process)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in STATIC.rglob("*") if p.is_file()):
        digest.update(path.relative_to(STATIC).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@cache
def page() -> bytes:
    """index.html with every file it names under this build's tagged folder."""
    text = (STATIC / "index.html").read_text(encoding="utf-8")
    return text.replace(f'"{PREFIX}', f'"{PREFIX}v-{tag()}/').encode()


def untagged(path: str) -> tuple[str, str]:
    """(the file's path under static/, its Cache-Control) for a requested `path`: a path
    under this build's tag is kept forever; any other (an untagged path, or the tag of
    another build, still named by a page loaded before an upgrade) is revalidated."""
    first, _, rest = path.partition("/")
    if first.startswith("v-") and rest:
        return rest, FOREVER if first == f"v-{tag()}" else REVALIDATE
    return path, REVALIDATE
