"""`search_files`: regex search over file contents, or glob search over file names, in the
workdir (ripgrep-like: hidden folders, VCS and dependency folders, binaries and huge files are
skipped; results and time are bounded)."""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from hermes.tools.registry import ToolContext, ToolError, tool
from hermes.tools.workdir import confine, display

SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})
MAX_FILE_BYTES = 2_000_000
MAX_SECONDS = 10.0
MATCH_CHARS = 300


def _walk(root: Path, allowed: Path | None) -> Iterator[Path]:
    """Files under `root`, sorted, not following symlinks out of `allowed`."""
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(folder, name)
            if path.is_symlink() and allowed is not None:
                if not path.resolve().is_relative_to(allowed):
                    continue
            yield path


def _lines(path: Path) -> list[str] | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


@tool
def search_files(
    ctx: ToolContext,
    pattern: str,
    target: Literal["content", "files"] = "content",
    path: str = ".",
    file_glob: str = "",
    limit: int = 50,
) -> str:
    """Search file contents by regex, or file names by glob (target='files').

    Args:
        pattern: Regex for content; glob such as *.py for files.
        path: Folder (or file) to search, relative to the working directory.
        file_glob: Only search files whose name matches this glob.
        limit: Maximum results.
    """
    settings = ctx.settings
    root = confine(settings, path)
    if not root.exists():
        raise ToolError(f"there is no file or folder {path!r}")
    allowed = None if settings.tools.files.allow_outside_workdir else root
    limit = max(1, min(limit, 500))
    deadline = time.monotonic() + MAX_SECONDS
    results: list[str] = []
    if target == "files":
        for file in _walk(root, allowed):
            if fnmatch.fnmatch(file.name, pattern) or fnmatch.fnmatch(
                display(settings, file), pattern
            ):
                results.append(display(settings, file))
            if len(results) >= limit or time.monotonic() > deadline:
                break
        return _summary(results, limit, f"files matching {pattern!r}")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"{pattern!r} is not a valid regular expression: {exc}") from None
    for file in _walk(root, allowed):
        if file_glob and not fnmatch.fnmatch(file.name, file_glob):
            continue
        for number, line in enumerate(_lines(file) or (), start=1):
            if regex.search(line):
                text = line if len(line) <= MATCH_CHARS else line[:MATCH_CHARS] + "…"
                results.append(f"{display(settings, file)}:{number}: {text}")
                if len(results) >= limit:
                    break
        if len(results) >= limit or time.monotonic() > deadline:
            break
    return _summary(results, limit, f"matches for {pattern!r}")


def _summary(results: list[str], limit: int, what: str) -> str:
    if not results:
        return f"No {what}."
    more = f"\n[stopped at {limit} results; narrow the search]" if len(results) >= limit else ""
    return "\n".join(results) + more
