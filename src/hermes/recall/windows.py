"""Window vectors: a turn embedded together with the turns before it.

A reply often carries its evidence only with the question it answers ("It had salads,
sandwiches and homemade desserts" answers "what food was on her dinner spread with her
mother?" only after "My mom and I made dinner together"). The sum of the turns' own vectors
does not say that; the vector of their joined text does. So each embedded message also gets
a window vector, of its text after the two turns before it in its session, and the first
page of a search scores its hits by it too (`ranking._first_page`). (A window of the one
turn before as well bought a little more on the LoCoMo dev slice, but lowered two of its
five conversations: bench/recall_page_fit.py.)

Windows are read for the few hits of a first page only, by id, so the search's matrix
stays one vector (and its sentences') per message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hermes.memory.embeddings import Embedder
from hermes.recall.batches import run_batches
from hermes.store.base import Store

SPANS = (2,)  # turns before the message that each of its windows holds
# the turns before a message take at most this much of its window, newest first and each
# by its end (the question a reply answers is usually said last), so the message itself is
# not cut off by the model's 256 word pieces after a long turn
BEFORE_CHARS = 600
BATCH = 256  # messages per step: their windows are two to three turns long


def window_texts(turns: Sequence[str]) -> list[str]:
    """A message's windows, from `turns` (its spoken text, then the turns before it, newest
    first): for each of `SPANS`, that many turns before it (at most `BEFORE_CHARS` of
    them) and it, oldest first."""
    said = turns[0]
    return [" ".join([*reversed(_ends(turns[1 : span + 1])), said]) for span in SPANS]


def _ends(before: Sequence[str]) -> list[str]:
    """The turns `before` (newest first) within `BEFORE_CHARS`: whole while they fit, then
    the end of the first that does not (from a word's start), then none."""
    kept, left = [], BEFORE_CHARS
    for turn in before:
        if len(turn) < left:
            kept.append(turn)
            left -= len(turn) + 1
            continue
        cut = turn[-left:] if left > 0 else ""
        cut = cut.split(" ", 1)[1] if " " in cut and len(turn) > left else cut
        if cut:
            kept.append(cut)
        break
    return kept


def to_bytes(vectors: np.ndarray) -> bytes:
    return np.asarray(vectors, dtype=np.float16).tobytes()


def from_bytes(data: bytes, dimensions: int) -> np.ndarray:
    """The windows' vectors, a row per span (float32)."""
    return np.frombuffer(data, dtype=np.float16).astype(np.float32).reshape(-1, dimensions)


def embed_windows(
    store: Store,
    embedder: Embedder,
    *,
    scope: str | None = None,
    after_id: int = 0,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[int, int]:
    """Embed the windows of messages that have a vector but no window vectors yet (of
    `scope`, or all), by id from `after_id`; (messages given windows, last id). A message
    with fewer turns before it has a window of what there is (its own text alone: its
    own vector again)."""
    vectors = store.vectors
    if vectors is None:
        return 0, after_id

    def step(after: int, size: int) -> tuple[int, int]:
        rows = vectors.pending_windows(embedder.name, scope=scope, after_id=after, limit=size)
        if not rows:
            return 0, after
        texts = [window_texts(row.turns) for row in rows]
        unique = list(dict.fromkeys(text for spans in texts for text in spans))
        encoded = embedder.encode(unique)
        where = {text: i for i, text in enumerate(unique)}
        vectors.put_windows(
            embedder.name,
            [
                (row.message_id, row.scope, to_bytes(encoded[[where[t] for t in spans]]))
                for row, spans in zip(rows, texts, strict=True)
            ],
        )
        return len(rows), rows[-1].message_id

    return run_batches(step, BATCH, after_id, limit, progress, should_stop)


def similarities(
    store: Store, model: str, scope: str, query: np.ndarray, message_ids: Sequence[int]
) -> dict[int, tuple[float, ...]]:
    """Each message's windows' cosine similarity to `query` (one per span), for those of
    `message_ids` whose windows are stored."""
    vectors = store.vectors
    if vectors is None or not message_ids:
        return {}
    found = vectors.windows(model, scope, message_ids)
    dimensions = len(query)
    return {
        mid: tuple(float(s) for s in from_bytes(data, dimensions) @ query)
        for mid, data in found.items()
    }
