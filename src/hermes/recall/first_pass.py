"""A first pass in fewer dimensions for a big scope's search by meaning.

Scoring every stored vector exactly reads the whole matrix for each question (a row per
message and per sentence, in float32), and at the newest `search.max_vectors` messages that
read is most of a search's time. The matrix's rows are alike (one model, one conversation's
subjects), so a few of its main directions hold most of each row: scored there first, the
rows that could make any list (a shortlist, and their neighbouring turns) are scored again
exactly, and the lists are taken as before. Below APPROX_ROWS the product is cheap and every
row is scored exactly. (docs/scale.md has the measured figures.)
"""

from __future__ import annotations

import numpy as np

APPROX_ROWS = 20_000  # table rows (messages and sentences) from which the first pass runs
DIMENSIONS = 128  # of the model's 384: a third of the read
SHORTLIST = 1_000  # rows of the best first-pass scores scored again exactly
SAMPLE = 4_096  # rows whose main directions are the projection's


def projection(table: np.ndarray) -> np.ndarray:
    """(dimensions x DIMENSIONS) float32: the main directions of a sample of `table`'s rows
    (uncentred, as the dot products are): projected on them, a row keeps most of itself."""
    rows = len(table)
    sample = table
    if rows > SAMPLE:  # a fixed seed: the same matrix gets the same projection
        sample = table[np.sort(np.random.default_rng(0).choice(rows, SAMPLE, replace=False))]
    _, _, directions = np.linalg.svd(sample, full_matrices=False)
    return np.ascontiguousarray(directions[:DIMENSIONS].T, dtype=np.float32)


def project(rows: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """`rows` in the projection's coordinates, a column per row (DIMENSIONS x rows, float32,
    contiguous). Column by column: the product with a query reads DIMENSIONS long runs
    of the table (OpenBLAS's kernel for that shape took ~3 ms over 100,000 rows, against
    ~5 ms for the same numbers a row of DIMENSIONS after another)."""
    return np.ascontiguousarray((rows @ basis).T, dtype=np.float32)


def scores(query: np.ndarray, basis: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """The query's first-pass score for each column of `columns` (`project`)."""
    return (query @ basis) @ columns


def last_columns(blocks: list[np.ndarray], count: int) -> list[np.ndarray]:
    """Views of the last `count` columns of `blocks` taken one after another."""
    out: list[np.ndarray] = []
    for block in reversed(blocks):
        if count <= 0:
            break
        width = block.shape[1]
        out.insert(0, block[:, -count:] if count < width else block)
        count -= width
    return out
