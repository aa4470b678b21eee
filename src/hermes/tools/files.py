"""`read_file`, `write_file`, `patch`: text files in the workdir, read with line numbers,
written atomically, edited by exact unique replacement (the shape Claude Code and the original
Hermes use, so models already know it)."""

from __future__ import annotations

import contextlib
import difflib
from pathlib import Path

from hermes.fileio import atomic_write
from hermes.tools.registry import ToolContext, ToolError, tool
from hermes.tools.workdir import confine, confine_for_write, display

LINE_CHARS = 2000
READ_CHARS = 40_000
DIFF_LINES = 80
_SNIFF = 8192


def _text_of(ctx: ToolContext, target: Path, path: str, *, strict: bool = False) -> str:
    """The file's text; a clear error for a missing, directory, oversized or binary file."""
    if not target.exists():
        raise ToolError(f"there is no file {path!r} (in {display(ctx.settings, target.parent)})")
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; use search_files with target='files'")
    size = target.stat().st_size
    cap = ctx.settings.tools.files.max_read_bytes
    if size > cap:
        raise ToolError(
            f"{path!r} is {size:,} bytes, over the {cap:,}-byte limit; use search_files to "
            "find the part you need, or terminal with head/tail/sed"
        )
    data = target.read_bytes()
    if b"\x00" in data[:_SNIFF]:
        raise ToolError(f"{path!r} is a binary file ({size:,} bytes); only text files can be read")
    if strict:  # an edit writes the text back: never replace what could not be decoded
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text; it cannot be patched") from None
    return data.decode("utf-8", errors="replace")


@tool
def read_file(ctx: ToolContext, path: str, offset: int = 1, limit: int = 500) -> str:
    """Read a text file as numbered lines (LINE|text).

    Args:
        path: File path, relative to the working directory.
        offset: First line to show (1-based).
        limit: How many lines to show.
    """
    target = confine(ctx.settings, path)
    lines = _text_of(ctx, target, path).splitlines()
    if not lines:
        return f"{display(ctx.settings, target)} is empty."
    start = max(1, offset)
    if start > len(lines):
        raise ToolError(f"offset {offset} is past the end: {path!r} has {len(lines)} lines")
    out: list[str] = []
    used = 0
    end = start - 1
    for number in range(start, min(len(lines), start + max(1, limit) - 1) + 1):
        line = lines[number - 1]
        if len(line) > LINE_CHARS:
            line = line[:LINE_CHARS] + f"… [{len(line) - LINE_CHARS} more chars]"
        row = f"{number:>6}|{line}"
        if used + len(row) > READ_CHARS and out:
            break
        out.append(row)
        used += len(row) + 1
        end = number
    if end < len(lines):
        out.append(f"[lines {start}-{end} of {len(lines)}; offset={end + 1} reads on]")
    return "\n".join(out)


def _write(target: Path, text: str) -> None:
    mode = 0o644
    with contextlib.suppress(FileNotFoundError):
        mode = target.stat().st_mode & 0o7777
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, text, mode=mode)


@tool
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Create or overwrite a text file with the whole content (parent folders are created).

    Args:
        path: File path, relative to the working directory.
    """
    target = confine_for_write(ctx.settings, path)
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; give a file path")
    existed = target.exists()
    _write(target, content)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {display(ctx.settings, target)} ({len(content.encode())} bytes, {lines} lines)."


def _line_numbers(text: str, needle: str) -> list[int]:
    numbers, start = [], 0
    while (found := text.find(needle, start)) != -1:
        numbers.append(text.count("\n", 0, found) + 1)
        start = found + max(1, len(needle))
    return numbers


def _diff(name: str, before: str, after: str) -> str:
    lines = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"a/{name}", f"b/{name}", n=2, lineterm=""
        )
    )
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"[diff cut: {len(lines) - DIFF_LINES} more lines]"]
    return "\n".join(lines)


@tool
def patch(
    ctx: ToolContext, path: str, old_string: str, new_string: str, replace_all: bool = False
) -> str:
    """Edit a file by replacing exact text; old_string must match once unless replace_all.

    Args:
        path: File path, relative to the working directory.
        old_string: Exact text to replace, whitespace included.
        new_string: Replacement text.
    """
    target = confine_for_write(ctx.settings, path)
    if old_string == "":
        raise ToolError("old_string is empty; to create or overwrite a file use write_file")
    if old_string == new_string:
        raise ToolError("old_string and new_string are the same; nothing to change")
    before = _text_of(ctx, target, path, strict=True)
    count = before.count(old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {path!r}; read_file it again and copy the exact text "
            "(indentation and line breaks included)"
        )
    if count > 1 and not replace_all:
        where = ", ".join(map(str, _line_numbers(before, old_string)[:10]))
        raise ToolError(
            f"old_string matches {count} places in {path!r} (lines {where}); include more "
            "surrounding text to make it unique, or set replace_all"
        )
    after = before.replace(old_string, new_string)
    _write(target, after)
    name = display(ctx.settings, target)
    replaced = f"{count} replacements" if count > 1 else "1 replacement"
    return f"Patched {name} ({replaced}).\n{_diff(name, before, after)}"
