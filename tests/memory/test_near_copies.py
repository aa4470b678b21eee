"""Near copies among a semantic list's rows (`semantic._first_saying`): worked out block by
block for speed, it must give what comparing every row with every earlier one gives, across
block boundaries too. No model: planted vectors."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.memory import semantic
from hermes.memory.semantic import NEAR_COPY, _first_saying, _Scores


class _Rows:
    """The two things `_first_saying` reads of a matrix: speakers, and whole-text vectors."""

    def __init__(self, vectors: np.ndarray, speakers: np.ndarray) -> None:
        self.vectors, self.speakers = vectors, speakers


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
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float16)
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
