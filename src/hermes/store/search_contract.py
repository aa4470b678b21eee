"""Recall's contract: what a backend answers so that the recall subsystem can rank.

A backend implements `Searcher` as `store.search` and `VectorStore` as `store.vectors`; the
ranking, query parsing and the semantic index above them live in `hermes.recall` and never
see SQL. Kept free of `hermes.store` imports, so the store may depend on it and not back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

SearchView = Literal["message", "exact", "window", "trigram"]
"""How a message is indexed for `Searcher.match_messages`; each view ranks on its own:

- `message`: the message's own text, stemmed (\"dogs\" finds \"dog\");
- `exact`: the message's own text, word forms as written (names, numbers, rare forms);
- `window`: the message with its neighbouring conversational turns (weighted lower) and its
  session's date and speaker name, so evidence split over two turns is found as one;
- `trigram`: character trigrams of the message, for scripts written without spaces (CJK)
  and for substrings.
"""

SEARCH_VIEWS: tuple[SearchView, ...] = ("message", "exact", "window", "trigram")


@dataclass(slots=True)
class TextMatch:
    """One conversational message that matched a query in one view.

    `score` is higher-is-better and only comparable within one `match_messages` call (the
    caller fuses views by rank, never by raw score, so backends need not agree on scales).
    Treat it as a value (`with_score` makes a changed copy). Not frozen: a frozen
    dataclass's constructor costs ~5x more, and one search builds a thousand or more.
    """

    message_id: int
    session_id: str
    index: int
    role: str
    timestamp: float
    score: float
    source: str = ""
    speaker: str | None = None  # the message's `name`, when people are named
    text_key: int = 0  # equal for the same text by the same speaker (`text_key()`); 0: unknown
    asks: bool = False  # the message only asks a question (`only_asks()`): it holds no answer
    # the message ends by asking the other person something (`asks_back()`): the speaker's
    # next turn likely answers it ("Wow! How long have you been painting?" / "Seven years")
    asks_back: bool = False
    # whether the text places something in time (`tells_when()`), when the match knows it
    # without a read (a search by meaning's rows carry it): None asks `Searcher.tells_when`
    dated: bool | None = None

    def with_score(self, score: float) -> TextMatch:
        """This match with another score (dataclasses.replace costs several times more, and
        a ranking rescores hundreds of matches per query)."""
        return TextMatch(
            self.message_id,
            self.session_id,
            self.index,
            self.role,
            self.timestamp,
            score,
            self.source,
            self.speaker,
            self.text_key,
            self.asks,
            self.asks_back,
            self.dated,
        )


QUESTION_MARKS = "?？"
SENTENCE_ENDS = ".!。！"
"""The characters of `only_asks` and `asks_back`, which `store.vector_sql.PG_ONLY_ASKS` writes in SQL."""


def only_asks(content: str | None) -> bool:
    """Whether a message is a question and nothing else ("Ooh, which one?"): it ends with a
    question mark and holds no sentence ending in "." or "!" ("I'm back from Iceland! Have
    you been?" tells something); the full-width forms (？ 。 ！) count too. Same rule as
    store.vector_sql.PG_ONLY_ASKS."""
    text = (content or "").strip()
    return text.endswith(tuple(QUESTION_MARKS)) and not any(c in text for c in SENTENCE_ENDS)


def asks_back(content: str | None) -> bool:
    """Whether a message ends with a question ("That looks great! Where was it?"), full-width
    mark too. Same rule as store.vector_sql.PG_ASKS_BACK."""
    return (content or "").rstrip().endswith(tuple(QUESTION_MARKS))


# words that place an event in time, English ("last Friday", "two weeks ago", "on the 15th",
# "in June"; not "may", more often a verb); one pattern for both backends (PostgreSQL:
# store.vector_sql.PG_TELLS_WHEN), without braces: that search's SQL goes through format()
WHEN_WORDS = (
    "yesterday|today|tonight|tomorrow|last|ago|next|recently|earlier|weekend|week|month|year"
    "|(?:mon|tues|wednes|thurs|fri|satur|sun)day|[0-9][0-9]?(?:st|nd|rd|th)"
    "|january|february|march|april|june|july|august|september|october|november|december"
)
# on lowercased text, looking at a word only when it starts as one of them does: ~5 us a
# message where IGNORECASE trying every alternative at every boundary took ~40 us
_TELLS_WHEN = re.compile(rf"\b(?=[adefjlmnorstwy0-9])(?:{WHEN_WORDS})\b")


def tells_when(content: str | None) -> bool:
    """Whether a message places something in time ("I ran a charity race last Saturday"):
    a question asking when is answered by such a turn, not by a later mention of the same
    event. Same rule as store.vector_sql.PG_TELLS_WHEN."""
    return _TELLS_WHEN.search((content or "").lower()) is not None


def text_key(content: str | None, speaker: str | None) -> int:
    """A key equal for one speaker's equal texts, so a ranking can show a message said again
    once (the same words from another person are another fact: keyed apart)."""
    return hash((content or "", speaker)) or 1


@dataclass(frozen=True, slots=True)
class SearchIndexHealth:
    """What `check_search_index` found: ok, and a sentence saying what is wrong if not."""

    ok: bool
    detail: str
    rows: int = 0


def query_terms(terms: Sequence[str]) -> list[str]:
    """The words a backend matches: lower-cased, each once, in order, none empty (so
    every backend reads "Lisbon lisbon" as the one word it is)."""
    return [t for t in dict.fromkeys(t.lower() for t in terms) if t]


class TermMatching:
    """`Searcher.match_messages` as every backend answers it before its own plan: the terms
    normalised (`query_terms`), nothing asked for nothing, excluded sessions each once. A
    backend implements `_matching` with what is left."""

    def match_messages(
        self,
        scope: str,
        terms: Sequence[str],
        *,
        view: SearchView = "window",
        limit: int = 50,
        exclude_sessions: Sequence[str] = (),
    ) -> list[TextMatch]:
        """Best-first messages of `scope` matching any term in `view` (see `Searcher`)."""
        words = query_terms(terms)
        if not words or limit <= 0:
            return []
        return self._matching(scope, words, view, limit, list(dict.fromkeys(exclude_sessions)))

    def _matching(
        self, scope: str, terms: list[str], view: SearchView, limit: int, excluded: list[str]
    ) -> list[TextMatch]:
        raise NotImplementedError


class Searcher(Protocol):
    """Full-text search over one scope's user/assistant messages.

    The ranking policy (which views, how they are fused, priors) lives above the store in
    `hermes.recall.ranking`; a backend only answers "which messages match these words in
    this view, best first". Every call is confined to `scope`.
    """

    def match_messages(
        self,
        scope: str,
        terms: Sequence[str],
        *,
        view: SearchView = "window",
        limit: int = 50,
        exclude_sessions: Sequence[str] = (),
    ) -> list[TextMatch]:
        """The best `limit` messages containing any of `terms` (lowercased words), best
        first, skipping the sessions in `exclude_sessions`. Empty `terms` → []."""
        ...

    def own_words(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, float]:
        """How well each of `message_ids` (of `scope`) matches `terms` by its own text (the
        `message` view), higher is better, comparable within one call: BM25 with each
        word's inverse document frequency as the backend's view weighs it, a message's
        length that of its window, computed for these messages alone (a ranking reordering
        its first page asks for ten, and a search over the view would score every row
        holding a common word). Messages holding none of the terms, and ids not in
        `scope`, are left out."""
        ...

    def message_snippets(
        self, scope: str, terms: Sequence[str], message_ids: Sequence[int]
    ) -> dict[int, str]:
        """A short excerpt of each message around its matches, matches marked `[like this]`;
        ids that are not in `scope` are left out."""
        ...

    def messages_at(self, scope: str, places: Sequence[tuple[str, int]]) -> list[TextMatch]:
        """The conversational messages of `scope` at the given (session id, message index)
        places (score 0, id order); places holding nothing, or a tool turn, are left out.
        Lets a ranking look at the turns after a hit (a follow-up question, its answer)."""
        ...

    def tells_when(self, scope: str, message_ids: Sequence[int]) -> set[int]:
        """Those of `message_ids` (of `scope`) whose text places something in time
        (`tells_when()`). Asked only for a question asking when, of its candidates: a
        flag on every match cost every search ~4 ms of regex on a busy machine."""
        ...

    def check_search_index(self) -> SearchIndexHealth:
        """Verify the search index against the stored messages (may read the whole index)."""
        ...

    def rebuild_search_index(self) -> int:
        """Rebuild the search index from the stored messages; returns messages indexed."""
        ...


class StoredVector(NamedTuple):
    """One message's vector bytes as `VectorStore.load` gives them, with where the message
    is and who said it (what `Searcher.messages_at` says of it), so a search by
    meaning needs no further read of its hits but an existence check."""

    message_id: int
    session_id: str
    vector: bytes
    speaker: str  # `name:<name>`, or `role:<role>` unnamed: a user and assistant never one
    message_index: int  # its place in its session
    role: str
    timestamp: float
    source: str
    name: str | None
    text_key: int  # as the backend's matches key the text (`text_key()`)
    asks: bool  # `only_asks()`
    dated: bool  # `tells_when()`

    @classmethod
    def read(cls, row: Sequence[Any], key: int, asks: bool, dated: bool) -> StoredVector:
        """From a backend's row (id, session id, vector, speaker, index, role, timestamp,
        source, name, ...), with the text key and the asks and dated flags it worked out."""
        return cls(
            int(row[0]),
            row[1],
            bytes(row[2]),
            row[3],
            int(row[4]),
            row[5],
            float(row[6]),
            row[7],
            row[8],
            key,
            asks,
            dated,
        )


class PendingWindow(NamedTuple):
    """A message whose windows need vectors: its spoken text, then the turns before it in
    its session (newest first, up to `vector_sql.WINDOW_TURNS`)."""

    message_id: int
    scope: str
    turns: tuple[str, ...]


class VectorStore(Protocol):
    """Embeddings of conversational messages, one per message and model (semantic search).

    The store keeps bytes; what they mean (dimensions, dtype) is the embedder's business
    (`hermes.recall.semantic`). Every read is confined to one scope.
    """

    def pending(
        self,
        model: str,
        *,
        scope: str | None = None,
        after_id: int = 0,
        limit: int = 256,
        starts: Mapping[str, int] | None = None,
    ) -> list[tuple[int, str, str]]:
        """(message id, scope, text) of messages with no vector of `model`, by id, after
        `after_id`; with `starts` (`newest_starts`), none older than its scope's start."""
        ...

    def count_pending(
        self, model: str, *, scope: str | None = None, starts: Mapping[str, int] | None = None
    ) -> int: ...

    def newest_starts(self, count: int, *, scope: str | None = None) -> dict[str, int]:
        """For each scope (or only `scope`) with more than `count` conversational
        messages: the id of the oldest of its newest `count`. A search by meaning looks at
        no more than a scope's newest `search.max_vectors` vectors, so older messages need
        none: embedding a million of them would take hours for nothing."""
        ...

    def whole_only(
        self,
        model: str,
        size: int,
        *,
        scope: str | None = None,
        after_id: int = 0,
        limit: int = 256,
        starts: Mapping[str, int] | None = None,
    ) -> list[tuple[int, str, str, bytes]]:
        """(message id, scope, text, vector) of messages whose vector of `model` is `size`
        bytes long (one vector: embedded before sentences got vectors of their own), by
        id, after `after_id` (and `starts`, as in `pending`)."""
        ...

    def put(self, model: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Store (message id, scope, vector); ids of messages deleted meanwhile are skipped."""
        ...

    def load(
        self, model: str, scope: str, *, after_id: int = 0, newest: int | None = None
    ) -> list[StoredVector]:
        """The vectors of `scope` with what a ranking needs to know of their messages, by
        id, after `after_id`; only the `newest` of them (None: all)."""
        ...

    def still_embedded(self, model: str, scope: str, message_ids: Sequence[int]) -> set[int]:
        """Those of `message_ids` (of `scope`) whose vector of `model` is still stored: a
        message deleted or edited since it was loaded has lost it."""
        ...

    def pending_windows(
        self, model: str, *, scope: str | None = None, after_id: int = 0, limit: int = 256
    ) -> list[PendingWindow]:
        """Messages with a vector of `model` but no window vectors of it, by id after
        `after_id`, with the texts their windows are made of."""
        ...

    def put_windows(self, model: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Store (message id, scope, window vectors); ids of messages deleted meanwhile are
        skipped. A message's windows go when it goes, is edited, or one of the turns its
        windows hold goes or is edited."""
        ...

    def windows(self, model: str, scope: str, message_ids: Sequence[int]) -> dict[int, bytes]:
        """The window vectors of `model` of those of `message_ids` (of `scope`) that have
        them."""
        ...

    def removed(self, scope: str) -> int:
        """How many vectors of `scope` were ever deleted (with their message, or by an edit
        of it): while it stays the same, every vector a process loaded is still stored, and
        a search need not ask which of its hits still exist."""
        ...

    def count(self, model: str, scope: str) -> int: ...

    def newest_message_id(self) -> int:
        """The highest id of a stored message (0: none): what a look for pending messages
        has seen to, when it found none, so the next look starts past it."""
        ...
