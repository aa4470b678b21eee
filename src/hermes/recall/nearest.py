"""How a search by meaning scores and lists messages: the options the ranking passes to
`SemanticSearch.search` (hermes.recall.ranking) and `SemanticIndex` (hermes.recall.semantic)
reads. One object, so the contract and the index never restate the list."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NearestOptions:
    """`context`: a message's score in context adds this times its best neighbour's.
    `distinct`: a text said many times is listed once (by its best-scoring message), and
    with `near_copies` a text said again in nearly the same words a few times at most.
    `speakers`: a third list of only their turns. `sentences`: a message scores this times
    its best sentence's similarity when that beats its whole text's. `sentence_copies`:
    near copies are compared by what scored (a sentence or the whole text)."""

    context: float = 0.5
    distinct: bool = True
    near_copies: bool = True
    speakers: tuple[str, ...] = ()
    sentences: float = 0.9
    sentence_copies: bool = True


DEFAULT_NEAREST = NearestOptions()
