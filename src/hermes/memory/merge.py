"""A three-way merge of lines, for reverting an old version under later changes.

`merge3(base, ours, theirs)` applies both sides' changes to `base` when they touch different
lines (a change next to another is fine), and returns None when they overlap: a revert then
refuses instead of guessing, so nothing written since is lost.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class _Hunk:
    start: int
    end: int
    lines: tuple[str, ...]


def _hunks(base: list[str], other: list[str]) -> list[_Hunk]:
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        _Hunk(i1, i2, tuple(other[j1:j2]))
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op != "equal"
    ]


def _clash(a: _Hunk, b: _Hunk) -> bool:
    if a == b:
        return False
    if a.start == a.end and b.start == b.end:
        return a.start == b.start  # two insertions at one place: which goes first?
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def merge3(base: str, ours: str, theirs: str) -> str | None:
    """`base` with the changes of both `ours` and `theirs`, or None if they overlap."""
    lines = base.splitlines(keepends=True)
    mine = _hunks(lines, ours.splitlines(keepends=True))
    other = _hunks(lines, theirs.splitlines(keepends=True))
    if any(_clash(a, b) for a in mine for b in other):
        return None
    hunks = sorted(set(mine) | set(other), key=lambda h: (h.start, h.end))
    out: list[str] = []
    at = 0
    for hunk in hunks:
        out.extend(lines[at : hunk.start])
        out.extend(hunk.lines)
        at = max(at, hunk.end)
    out.extend(lines[at:])
    return "".join(out)
