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

import re
from collections.abc import Sequence
from dataclasses import dataclass

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
    forms = [f"{re.escape(term)}{_ENDINGS}?"]
    if len(term) >= 4:  # "danc" + "ing": the last letter gives way to an ending
        forms.append(f"{re.escape(term[:-1])}{_ENDINGS}")
    return re.compile(rf"\b(?:{'|'.join(forms)})\b")


def bm25_rows(
    rows: Sequence[tuple[str, str]], terms: Sequence[str], weights: Weights = Weights()
) -> list[float]:
    """A score per (lowercased text, lowercased speaker) row for `terms` (higher is
    better), each row known to hold every term somewhere in its indexed columns."""
    forms = [form_pattern(t) for t in terms]
    lengths = [len(text.split()) for text, _ in rows]
    average = max(sum(lengths) / len(lengths), 1.0) if lengths else 1.0
    scores = []
    for (text, speaker), length in zip(rows, lengths, strict=True):
        norm = K1 * (1 - B + B * length / average)
        score = 0.0
        for term, form in zip(terms, forms, strict=True):
            count = weights.body * len(form.findall(text))
            if speaker and term in speaker.split():
                count += weights.speaker
            count = count or weights.elsewhere
            score += count * (K1 + 1) / (count + norm)
        scores.append(score)
    return scores
