"""How a semantic list picks its rows, against plain references. Near copies
(`semantic._first_saying`), worked out block by block for speed, must be what comparing
every row with every earlier one gives, across block boundaries too; the best row of each
distinct text (`semantic._best_rows`) must be found however deep the look has to go. No
model: planted vectors and scores."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.recall import semantic
from hermes.recall.semantic import NEAR_COPY, _best_rows, _first_saying, _Groups, _Scores


class _Rows:
    """The two things `_first_saying` reads of a matrix: speakers, and whole-text vectors
    (its table, with no sentence vectors after them)."""

    def __init__(self, vectors: np.ndarray, speakers: np.ndarray) -> None:
        self.table, self.speakers = vectors, speakers


def _reference(vectors: np.ndarray, speakers: np.ndarray) -> list[int]:
    out = []
    for i in range(len(vectors)):
        earlier = [
            j
            for j in range(i)
            if speakers[j] == speakers[i] and float(vectors[i] @ vectors[j]) >= NEAR_COPY
        ]
        out.append(earlier[0] if earlier else i)
    return out


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=300),
    lines=st.integers(min_value=1, max_value=40),
    seed=st.integers(min_value=0, max_value=2**16),
    before=st.floats(min_value=0.0, max_value=1.0),
)
def test_near_copies_block_by_block_are_those_of_all_pairs(
    n: int, lines: int, seed: int, before: float
) -> None:
    rng = np.random.default_rng(seed)
    said = rng.standard_normal((lines, 16))
    vectors = said[rng.integers(0, lines, n)] + 0.35 * rng.standard_normal((n, 16))
    vectors = (
        (vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
        .astype(np.float16)
        .astype(np.float32)
    )  # as stored, widened as loaded
    speakers = rng.integers(0, 3, n)
    scores = _Scores(_Rows(vectors, speakers), np.zeros(n), None)  # type: ignore[arg-type]
    rows = rng.permutation(n)  # best first: any order
    expected = _reference(vectors[rows].astype(np.float32), speakers[rows])
    assert _first_saying(rows, scores).tolist() == expected
    # a deeper look, given what a shorter look at the same best rows found, agrees too
    shorter = rows[: int(before * n)]
    known = _first_saying(shorter, scores)
    assert _first_saying(rows, scores, known).tolist() == expected
    assert semantic.COPY_BLOCK < 300  # the examples cross block boundaries


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=3000),
    texts=st.integers(min_value=1, max_value=400),
    limit=st.integers(min_value=1, max_value=300),
    seed=st.integers(min_value=0, max_value=2**16),
    tied=st.booleans(),
)
def test_the_best_row_of_each_text_however_often_it_was_said(
    n: int, texts: int, limit: int, seed: int, tied: bool
) -> None:
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, texts, n) ** 2  # few texts said often, many said once
    if tied:  # a text's rows score alike (its own similarity): the newest stands for it
        scores = (rng.permutation(texts**2).astype(np.float32) / texts**2)[groups]
    else:  # no ties: one right order
        scores = rng.permutation(n).astype(np.float32) / n
    order = sorted(range(n), key=lambda r: (-scores[r], -r))
    seen: set[int] = set()
    expected = [r for r in order if not (groups[r] in seen or seen.add(groups[r]))][:limit]
    assert _best_rows(scores, _Groups(groups), limit).tolist() == expected
    if not tied:  # (ungrouped, rows that tie at the cut may be any of them)
        assert _best_rows(scores, None, limit).tolist() == order[:limit]
