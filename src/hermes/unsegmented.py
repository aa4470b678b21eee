"""Scripts written without spaces between words (Thai, kana, CJK, hangul), defined once.

A word index cannot split "来月は京都旅行に行きます" into words: unicode61 and PostgreSQL's
parsers keep the run as one token, so "京都旅行" never matches it. Such messages are also
indexed by character trigrams (SQLite's trigram view, PostgreSQL's pg_trgm), and a query in
these scripts asks that view. Both backends and the ranking read the ranges from here.
"""

from __future__ import annotations

import re
from functools import cache

RANGES: tuple[tuple[str, str], ...] = (
    ("\u0e00", "\u0e7f"),  # Thai
    ("\u3040", "\u30ff"),  # hiragana, katakana
    ("\u3400", "\u9fff"),  # CJK ideographs (extension A and unified)
    ("\uac00", "\ud7af"),  # hangul syllables
    ("\uf900", "\ufaff"),  # CJK compatibility ideographs
)
CLASS = "[" + "".join(f"{lo}-{hi}" for lo, hi in RANGES) + "]"
"""A character class of those scripts, the same in Python, SQLite GLOB and PostgreSQL `~`."""


@cache
def _pattern(suffix: str) -> re.Pattern[str]:
    """Compiled at first use: the class spans ~50,000 code points, which takes the regex
    compiler milliseconds that every store-only CLI command would otherwise pay at import."""
    return re.compile(CLASS + suffix)


MAX_TRIGRAMS = 24  # trigrams asked per query, at most (the first ones: a query says its point)


def unsegmented(text: str) -> bool:
    """Whether `text` holds any character of a script written without spaces."""
    # (an ASCII string knows it is one: no scan, where the class's search walks the text)
    return not text.isascii() and _pattern("").search(text) is not None


def trigram_terms(text: str, *, limit: int = MAX_TRIGRAMS) -> list[str]:
    """The query's runs of unsegmented script as overlapping three-character pieces, for the
    trigram view: a stored message holding most of a question's pieces holds its words,
    whatever particles surround them ("京都旅行に行った" finds "京都旅行に行きます"). A run
    of three characters or fewer is itself the piece; none shorter than three (no trigram
    to look up)."""
    pieces: list[str] = []
    for run in _pattern("+").findall(text):
        grams = [run] if len(run) <= 3 else [run[i : i + 3] for i in range(len(run) - 2)]
        pieces += [g for g in grams if len(g) == 3 and g not in pieces]
    return pieces[:limit]
