"""BM25 for a few hundred rows, computed here instead of by FTS5.

Why: FTS5's `bm25()` works out each query word's document frequency by walking that word's
whole doclist, once per query. For a question made only of common words ("When did Sam go
to the concert?" at a million messages: each word in thousands of rows) that walk costs
several times more than finding the few hundred rows holding all of them. Those words are
all common, so their document frequencies barely differ and the ranking among such rows
comes from the other two parts of BM25: how often a word occurs in the message, and how
long the message is. Both are cheap to compute from the message text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

K1 = 1.2
B = 0.75


@dataclass(frozen=True, slots=True)
class Weights:
    """What a query word counts for where it occurs (the window view's column weights)."""

    body: float = 1.0
    speaker: float = 0.5
    elsewhere: float = 0.3  # a row matched it, but not in its own text: a neighbouring turn


_ENDINGS = "(?:s|es|e|d|ed|ing|er|ers|y|ies|ied|ly)"


def form_pattern(term: str) -> re.Pattern[str]:
    """Words that are forms of the query `term`, a crude stand-in for the index's Porter
    stemmer: "concerts", "going", "danced" and "studied" for "concert", "go", "dance" and
    "study"."""
    return re.compile(rf"\b{_forms(term)}\b")


def _forms(term: str) -> str:
    """The forms of `term` as one pattern that starts with a literal (its common stem), so
    that a scan skips to where the stem occurs instead of trying every position."""
    if len(term) < 4:
        return f"{re.escape(term)}{_ENDINGS}?"
    # "danc" + "ing": the last letter gives way to an ending
    return f"{re.escape(term[:-1])}(?:{re.escape(term[-1])}{_ENDINGS}?|{_ENDINGS})"


def _word_starts(term: str, text: str) -> list[int]:
    """Where forms of `term` begin in `text` as whole words (`form_pattern`'s matches)."""
    starts = []
    for match in re.finditer(rf"{_forms(term)}\b", text):
        at = match.start()  # a match inside a longer word is not one (\w: alnum or _)
        if not at or not (text[at - 1].isalnum() or text[at - 1] == "_"):
            starts.append(at)
    return starts


def idf(rows_with_word: int, rows: int) -> float:
    """BM25's (and FTS5's) inverse document frequency, floored at a small positive value."""
    rows = max(rows, rows_with_word)
    return max(math.log((rows - rows_with_word + 0.5) / (rows_with_word + 0.5)), 1e-6)


def bm25_rows(
    rows: Sequence[tuple[str, str]], terms: Sequence[str], weights: Weights = Weights()
) -> list[float]:
    """A score per (lowercased text, lowercased speaker) row for `terms` (higher is
    better), each row known to hold every term somewhere in its indexed columns. The
    arithmetic runs a column (all rows) at a time in the order scoring one row would take,
    so each score is the same float: at 1,000 rows a loop per row and term was most of a
    common-word question's ranking."""
    if not rows:
        return []
    import numpy as np  # not before a search: building the app stays without it

    texts = [text for text, _ in rows]
    lengths = np.fromiter((len(text.split()) for text in texts), dtype=np.float64, count=len(rows))
    average = max(float(lengths.sum()) / len(rows), 1.0)
    norm = K1 * (1 - B + B * lengths / average)
    # one scan of all the texts per term (rows joined by a line break: a form is a whole
    # word, so no match spans two rows), not one per row and term: a third of the time
    joined = "\n".join(texts)
    starts = np.fromiter(
        accumulate((len(text) + 1 for text in texts[:-1]), initial=0), dtype=np.int64
    )
    said = {speaker: speaker.split() for _, speaker in rows if speaker}
    scores = np.zeros(len(rows), dtype=np.float64)
    for term in terms:
        at = np.searchsorted(starts, _word_starts(term, joined), side="right") - 1
        count = weights.body * np.bincount(at, minlength=len(rows)).astype(np.float64)
        named = [term in said[speaker] if speaker else False for _, speaker in rows]
        if any(named):
            count[np.asarray(named)] += weights.speaker
        count[count == 0] = weights.elsewhere  # (`count or elsewhere`)
        scores += count * (K1 + 1) / (count + norm)
    return [float(score) for score in scores.tolist()]
