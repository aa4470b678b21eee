"""Ranking past messages for a free-text query, confined to one scope.

The store answers "which messages match these words in this view" (`Searcher`); this module
decides what to ask and how to combine the answers. Each step is measured by
bench/recall.py (its ablation table removes one at a time):
- stemming (in the index) and stopword removal (question words carry no evidence);
- BM25 over each message *with* its neighbouring turns, neighbours weighted lower, so
  context finds the turn and the turn's own words still count most;
- a role prior: a first-person question ("my dog") is about what the user said, a
  second-person one ("what did you suggest") about what the assistant said;
- recency as a tie-breaker (an updated fact's newer statement wins a tie);
- speaker awareness: a turn said by the person the question names (the first it names:
  its subject) counts triple (the store drops a name that is in too many rows from
  candidate picking, so it counts here);
- a question asking when favours turns that say when ("last Friday", "on the 15th");
- date awareness: a turn from the day, month or year the question names counts double,
  and only such turns count in the semantic lists (by meaning, "what was she up to in
  May?" is near small talk from every month);
- cron run sessions count half: what the agent produced alone ranks below conversations;
- at most `per_session` hits per session before other sessions get their turn, and a text
  said again (the same message in several sessions) once before the others: a repeat
  tells the reader nothing new and would push different evidence out of the top k (also
  within each list the fusion below ranks, so repeats do not take ranks from others);
- search by meaning (on by default), the nearest messages by meaning (semantic.py) fused with
  the lexical candidates by reciprocal rank before the priors above apply; the question is
  embedded with the names of the scope's speakers made pronouns (the speaker prior covers
  who; the embedding should match what happened); a long message counts by its best
  sentence too, a little below its whole text (its point among other sentences).
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from hermes.recall.nearest import DEFAULT_NEAREST, NearestOptions
from hermes.recall.query import (
    all_terms,
    asked_about,
    asks_about_now,
    asks_when,
    likely_role,
    named_period,
    query_terms,
    query_words,
)
from hermes.store.search_contract import Searcher, SearchView, TextMatch
from hermes.unsegmented import trigram_terms, unsegmented


@dataclass(frozen=True, slots=True)
class RankConfig:
    """Knobs of the ranking; the defaults are what the real conversations of the LoCoMo dev
    slice measured best (bench/recall_locomo.py --ablations), each conversation apart."""

    view: SearchView = "window"
    rrf_k: float = 20.0  # reciprocal-rank constant of the word and trigram views' fusion
    candidates: int = 200
    role: float = 1.0
    recency: float = 0.01
    present: float = 0.5  # a question about now: the newest candidate's score counts 1.5x
    per_session: int = 5  # real sessions hold several turns of the evidence
    repeats: int = 1  # hits with a text already shown this often go after the others (0: off)
    # ... and (by meaning) with nearly the same text as a better one: off, as in real talk a
    # turn near another is more often more evidence than a copy
    near_copies: bool = False
    demoted: float = 0.5  # score factor for sessions the agent ran alone (cron jobs)
    question: float = 0.5  # score factor for a turn that only asks ("Ooh, which one?")
    speaker: float = 2.0  # boost for a turn by the person the question names
    # ... only the first it names when it names several (its subject, `asked_about`):
    # LoCoMo dev R@1 .464 -> .470, R@10 .847 -> .855, four of five conversations up
    first_named: bool = True
    stopwords: bool = True
    # the fusion of words and meaning: weights and constant chosen by leaving one LoCoMo dev
    # conversation out at a time (bench/recall_locomo.py); three of five folds chose these
    semantic: float = 0.35  # weight of the semantic list in the fusion (0: words only)
    semantic_k: float = 20.0  # reciprocal-rank constant of that fusion
    semantic_candidates: int = 100  # from each semantic list (ranks past it add ~nothing)
    semantic_floor: float = 0.1  # less similar than this (cosine): unrelated, not evidence
    context: float = 0.5  # a neighbouring turn's similarity added to a message's own ...
    context_weight: float = 0.35  # ... and the weight of that ranking in the fusion
    period: float = 1.0  # boost for a turn from the time the question names ("in May 2023")
    # boost, for a question asking when, of a turn that says when ("last Friday"): LoCoMo
    # dev temporal R@1 .660 -> .686, all R@1 .470 -> .475; every leave-one-conversation-out
    # fold chose it among 0, 0.25, 0.5 and 1
    when: float = 0.25
    period_only: bool = True  # ... and the semantic lists keep only turns from then
    unnamed_meaning: bool = True  # embed the question with its speakers' names as pronouns
    # embed the question while the words are searched (`SemanticSearch.prepare`): the same
    # hits, sooner (False: one after the other, as an ablation and for comparison)
    overlap: bool = True
    speaker_meaning: float = 0.35  # weight of the semantic list of the named speaker's turns
    replies: int = 1  # best hits whose reply to a follow-up question joins them (0: off)
    sentences: float = 0.9  # a message's best sentence's similarity counts this much (0: off)
    sentence_copies: bool = True  # near copies compared by what scored (a sentence or all)
    # a question in a script without spaces ("京都旅行") also asks the trigram view: the word
    # views keep a whole run of such script as one token ("来月は京都旅行に行きます")
    trigrams: bool = True
    # the speaker prior is a preference, not a filter (`_others_too`): the best hit said by
    # someone other than the person the question names, when it is among the `others_within`
    # best without the prior, keeps the place `others_at` (0-based: the tenth) of the list
    others: int = 1  # such hits (0: off)
    others_at: int = 9
    others_within: int = 5
    # the first page reordered by what the fusion by rank leaves out (`_first_page`): each
    # hit's similarity by meaning, that of the turns around it (one before, one after, two
    # before, two after), that of its window (it after the two turns before it:
    # `recall.windows`) and how well its own words (not its window's) match; weights:
    # the median of five fits (pairwise logistic) each leaving one LoCoMo dev conversation
    # out, relative to the fused score's (1): bench/recall_page_fit.py
    page: int = 10  # hits reordered (0: off); the hits below keep their places
    page_weights: tuple[float, ...] = (0.42, 0.36, 0.23, 0.16, 0.18, 0.63)  # as `similarities`
    page_own_words: float = 0.69


class NearestLists(Protocol):
    alone: list[TextMatch]
    in_context: list[TextMatch]
    by_speaker: list[TextMatch]

    def same_as(self, message_ids: Sequence[int]) -> dict[int, int]:
        """Messages (given best first) that say again what an earlier one said, mapped to it."""
        ...

    def similarities(self, message_ids: Sequence[int]) -> dict[int, tuple[float, ...]]:
        """Each message's similarity to the query, then the turns' one before, one after,
        two before and two after it, then its window's (it after the two turns before)."""
        ...


class SemanticSearch(Protocol):
    """Nearest messages by meaning (hermes.recall.semantic.SemanticIndex)."""

    def prepare(
        self,
        scope: str,
        plan: Callable[[set[str]], tuple[str, NearestOptions]],
        *,
        limit: int,
        exclude_sessions: Sequence[str] = (),
    ) -> Any:
        """Begin, in the background, the search that `plan` (question and options) makes
        of the scope's speakers' names; `search(prepared=...)` takes its result when it
        asks the same."""
        ...

    def search(
        self,
        scope: str,
        query: str,
        *,
        limit: int,
        exclude_sessions: Sequence[str] = (),
        options: NearestOptions = DEFAULT_NEAREST,
        prepared: Any = None,
    ) -> NearestLists: ...


DEFAULT_CONFIG = RankConfig()
DEMOTED_SOURCES = frozenset({"cron"})


@dataclass(slots=True)
class Ranked:
    message_id: int
    session_id: str
    index: int
    role: str
    timestamp: float
    score: float
    text_key: int = 0


def _fuse(
    cands: list[TextMatch],
    config: RankConfig,
    role: str | None,
    words: frozenset[str],
    period: tuple[float, float] | None = None,
    now: bool = False,
    dated: frozenset[int] | set[int] = frozenset(),
    best: int | None = None,
) -> list[Ranked]:
    """Scores normalised to the best candidate, a role prior, recency to break ties (or,
    with `now`, a question about the present, to favour the newest statements). With
    `best`, only the first `best` of that list (the other speaker's place needs five)."""
    if not cands:
        return []
    top = max(c.score for c in cands) or 1.0
    times = sorted({c.timestamp for c in cands})
    span = max(1, len(times) - 1)
    time_pos = {t: i / span for i, t in enumerate(times)}
    # each factor as the expression `1.0 + weight` gives it, worked out once per search
    # rather than once per candidate (hundreds at 1M): the same floats, in the same order
    by_role, by_speaker = 1.0 + config.role, 1.0 + config.speaker
    by_period, by_when = 1.0 + config.period, 1.0 + config.when
    demoted, question, present, recency = (
        config.demoted,
        config.question,
        config.present,
        config.recency,
    )
    scored: list[tuple[float, TextMatch]] = []
    for c in cands:
        score = c.score / top
        if role is not None and c.role == role:
            score *= by_role
        if c.source in DEMOTED_SOURCES:
            score *= demoted
        if c.asks:  # asks for an answer rather than holding one
            score *= question
        if c.speaker and c.speaker.lower() in words:
            score *= by_speaker
        if period is not None and period[0] <= c.timestamp < period[1]:
            score *= by_period
        if c.message_id in dated:  # says when, and the question asks when
            score *= by_when
        at = time_pos[c.timestamp]
        if now:  # the newer of two statements is likelier what is true now
            score *= 1.0 + present * at
        score += recency * at
        scored.append((score, c))
    if best is not None:  # the same as the whole list's first `best`: the order is total
        scored = heapq.nsmallest(
            best, scored, key=lambda x: (-x[0], -x[1].timestamp, x[1].message_id)
        )
    out = [
        Ranked(c.message_id, c.session_id, c.index, c.role, c.timestamp, score, c.text_key)
        for score, c in scored
    ]
    if best is None:
        out.sort(key=lambda x: (-x.score, -x.timestamp, x.message_id))
    return out


def rank_messages(
    searcher: Searcher,
    scope: str,
    query: str,
    *,
    limit: int = 10,
    exclude_sessions: Sequence[str] = (),
    config: RankConfig = DEFAULT_CONFIG,
    semantic: SemanticSearch | None = None,
) -> list[Ranked]:
    """The `limit` best user/assistant messages of `scope` for `query`, best first."""
    terms = query_terms(query) if config.stopwords else all_terms(query)
    if not terms or limit <= 0:
        return []
    size = max(config.candidates, limit * 4)
    meaning = min(size, config.semantic_candidates)
    plan = partial(_meaning_plan, query, config)
    prepared = None
    if semantic is not None and config.semantic > 0 and config.overlap:
        # the search by meaning runs while the words are searched, for the speakers it
        # guesses from the scope's; below, it serves if the candidates' speakers agree
        prepared = semantic.prepare(scope, plan, limit=meaning, exclude_sessions=exclude_sessions)
    cands = searcher.match_messages(
        scope, terms, view=config.view, limit=size, exclude_sessions=exclude_sessions
    )
    if config.trigrams and unsegmented(query):
        cands = _with_trigrams(searcher, scope, query, cands, config, exclude_sessions)
    period = named_period(query) if config.period else None
    near: NearestLists | None = None
    speakers = {c.speaker.lower() for c in cands if c.speaker}
    subject = asked_about(query, speakers) if config.first_named else query_words(query)
    if semantic is not None and config.semantic > 0:
        text, options = plan(speakers)
        near = semantic.search(
            scope,
            text,
            limit=meaning,
            exclude_sessions=exclude_sessions,
            options=options,
            prepared=prepared,
        )
        lists = [
            (_similar(near.alone, config, period), config.semantic),
            (_similar(near.in_context, config, period), config.context_weight),
            (_similar(near.by_speaker, config, period), config.speaker_meaning),
        ]
        cands = _with_semantic(cands, lists, config, near)
    now = asks_about_now(query)
    dated: set[int] = set()
    if config.when > 0 and asks_when(query):
        # a search by meaning's matches say whether they tell when; only the rest are read
        dated = {c.message_id for c in cands if c.dated}
        unknown = [c.message_id for c in cands if c.dated is None]
        if unknown:
            dated |= searcher.tells_when(scope, unknown)
    role = likely_role(query)
    ranked = _fuse(cands, config, role, subject, period, now, dated)
    if config.replies:
        ranked = _with_replies(searcher, scope, ranked, config.replies)
    ranked = _diversify(ranked, config)
    # not with near copies set aside (the page's cosines would bring back what they set
    # aside; its weights were fitted with them kept, the default), nor for a question in the
    # first or second person or about now: its weights were fitted on questions about named
    # people, and blind to whose turn a hit is and how new, it overrode the role and present
    # priors (bench/recall.py chat slice, "what is my dog's name", R@1 .583 -> .419)
    if near is not None and config.page and not config.near_copies and role is None and not now:
        ranked = _first_page(searcher, scope, terms, ranked, near, config)
    if config.others and config.speaker and subject & speakers:

        def scored(found: list[TextMatch], names: frozenset[str]) -> list[Ranked]:
            return _fuse(found, config, role, names, period, now, dated, config.others_within)

        ranked = _others_too(cands, ranked, config, scored, subject & speakers)
    return ranked[:limit]


def _others_too(
    cands: list[TextMatch],
    ranked: list[Ranked],
    config: RankConfig,
    scored: Callable[[list[TextMatch], frozenset[str]], list[Ranked]],
    subject: frozenset[str],
) -> list[Ranked]:
    """`ranked` with the best `config.others` hits said by someone else than the `subject`
    (the person the question names, whose turns the speaker prior favours) placed at
    `config.others_at`, when they rank among the `config.others_within` best without that
    prior. A question may name the wrong person, or ask what one was told by the other
    ("What did John share with the person he skyped about?" is answered by the person who
    skyped): the prior triples the named person's turns, and the other's best match, first
    without it, fell out of the list. LoCoMo dev R@10 .855 -> .867, R@20 .897 -> .913,
    R@1 and R@5 unchanged; four of five conversations up or unchanged."""
    said_by = {c.message_id: (c.speaker or "").lower() for c in cands}
    head = {r.message_id for r in ranked[: config.others_at]}
    plain = scored(cands, frozenset())[: config.others_within]
    extra = [r for r in plain if said_by.get(r.message_id) not in subject]
    extra = [r for r in extra if r.message_id not in head][: config.others]
    if not extra:
        return ranked
    moved = {r.message_id for r in extra}
    rest = [r for r in ranked if r.message_id not in moved]
    return rest[: config.others_at] + extra + rest[config.others_at :]


def _first_page(
    searcher: Searcher,
    scope: str,
    terms: list[str],
    ranked: list[Ranked],
    near: NearestLists,
    config: RankConfig,
) -> list[Ranked]:
    """The first `config.page` hits reordered by their fused score (relative to the best)
    plus what the fusion by rank cannot see: how similar each is by meaning (a cosine, not
    a place in a list), how similar the turns around it are (an answer follows the question
    it answers; a speaker's details follow the turn that brought the subject up two turns
    before), how similar it is read after the turns before it (its window: a reply's
    meaning is often only in what it answers), and how its own words match the question (BM25 of the
    message alone, relative to the best such match: the window view scores a turn with its
    neighbours' words, so a whole exchange ties where one turn says it). The hits below
    keep their places. Fitted and judged leaving one LoCoMo dev conversation out at a
    time (bench/recall_page_fit.py)."""
    page = ranked[: config.page]
    if len(page) < 2:
        return ranked
    own = searcher.own_words(scope, terms, [r.message_id for r in page])
    best_own = max(own.values(), default=0.0) or 1.0
    words = {message_id: score / best_own for message_id, score in own.items()}
    similar = near.similarities([r.message_id for r in page])
    top = page[0].score or 1.0
    weights = config.page_weights

    def score(r: Ranked) -> float:
        around = similar.get(r.message_id, ())
        by_meaning = sum(w * s for w, s in zip(weights, around, strict=False))
        return r.score / top + by_meaning + config.page_own_words * words.get(r.message_id, 0.0)

    rescored = sorted(page, key=score, reverse=True)  # stable: ties keep the fused order
    return rescored + ranked[config.page :]


def _with_replies(searcher: Searcher, scope: str, ranked: list[Ranked], top: int) -> list[Ranked]:
    """A hit among the `top` best that the other speaker answered with a question ("I
    stayed up all night because of a novel." / "Ooh, which one?"; "Wow! How long have you
    been painting?") is followed by its speaker's reply ("'Circe'."; "Seven years now"):
    the detail the question asks for is often there, not in the hit. The reply ranks just
    below the hit, unless it already ranks higher. (A follow-up that only asked was the
    rule before, and changed nothing on the LoCoMo dev slice; any turn ending with a
    question: R@5 .766 -> .778, R@10 .842 -> .847 at `replies` 1, four of five
    conversations up and none down, no category down. Deeper (3, 5) did as well at R@10
    but took multi-hop and open-domain down; leave-one-conversation-out over 0/1/3/5
    estimates R@10 .843.)"""
    best = ranked[:top]
    places = [(r.session_id, r.index + k) for r in best for k in (0, 1, 2)]
    turns = {(m.session_id, m.index): m for m in searcher.messages_at(scope, places)}
    have = {r.message_id: r for r in ranked}
    changed = False
    for r in best:
        hit, ask, reply = (turns.get((r.session_id, r.index + k)) for k in (0, 1, 2))
        if hit is None or ask is None or reply is None or not ask.asks_back:
            continue
        if ask.role == hit.role or (reply.role, reply.speaker) != (hit.role, hit.speaker):
            continue
        score = r.score * 0.999
        known = have.get(reply.message_id)
        if known is None:
            have[reply.message_id] = Ranked(
                reply.message_id,
                reply.session_id,
                reply.index,
                reply.role,
                reply.timestamp,
                score,
                reply.text_key,
            )
        elif known.score < score:
            known.score = score
        else:
            continue
        changed = True
    if not changed:
        return ranked
    out = list(have.values())
    out.sort(key=lambda x: (-x.score, -x.timestamp, x.message_id))
    return out


def _similar(
    found: list[TextMatch], config: RankConfig, period: tuple[float, float] | None
) -> list[TextMatch]:
    """The semantic hits that count as evidence: similar enough, and (when the question
    names a time and `period_only`) from then. "What was Dave up to in May 2023?" is near,
    by meaning, to "What are your plans for the weekend?" from any month; by words the
    question's month finds that month's turns, and these must not be outvoted."""
    if period is not None and config.period_only:
        found = [m for m in found if period[0] <= m.timestamp < period[1]]
    return [m for m in found if m.score >= config.semantic_floor]


def _repeat_keys(
    found: Sequence[TextMatch], same_as: Callable[[Sequence[int]], dict[int, int]] | None
) -> dict[int, int]:
    """A key per message (best first) that is equal for messages saying the same thing:
    the same text and speaker, or (by meaning, when `same_as` can tell) nearly so."""
    keys = {m.message_id: m.text_key for m in found}
    if same_as is not None:
        for copy, first in same_as([m.message_id for m in found]).items():
            keys[copy] = keys[first]
    return keys


def _meaning_plan(query: str, config: RankConfig, speakers: set[str]) -> tuple[str, NearestOptions]:
    """What the search by meaning asks, given the names of the people who speak: the
    question with their names made pronouns (`without_names`), and a list of the turns of
    the one it asks about."""
    subject = asked_about(query, speakers) if config.first_named else query_words(query)
    return without_names(query, speakers) if config.unnamed_meaning else query, NearestOptions(
        context=config.context,
        distinct=config.repeats > 0,
        near_copies=config.near_copies,
        speakers=tuple(sorted(speakers & subject)) if config.speaker_meaning else (),
        sentences=config.sentences,
        sentence_copies=config.sentence_copies,
    )


def without_names(query: str, speakers: set[str]) -> str:
    """The question with the names of people who speak in the scope made pronouns: the
    speaker prior already favours their turns, and in an embedding a name outweighs the
    event asked about ("When did Audrey get hurt?" lands nearer "Audrey! So good to hear
    from you" than "I twisted my knee yesterday"; "When did they get hurt?" does not)."""
    if not speakers:
        return query

    def pronoun(match: re.Match[str]) -> str:
        if match.group(1).lower() not in speakers:
            return match.group(0)
        return "their" if match.group(2) else "they"

    return _NAME.sub(pronoun, query)


_NAME = re.compile(r"\b(\w+)('s|’s)?\b")


def _with_trigrams(
    searcher: Searcher,
    scope: str,
    query: str,
    words: list[TextMatch],
    config: RankConfig,
    exclude: Sequence[str],
) -> list[TextMatch]:
    """The word views' candidates fused by rank with the trigram view's, asked for the
    query's unsegmented runs as three-character pieces (`scripts.trigram_terms`)."""
    pieces = trigram_terms(query)
    if not pieces:
        return words
    found = searcher.match_messages(
        scope, pieces, view="trigram", limit=config.candidates, exclude_sessions=exclude
    )
    if not found:
        return words
    fused: dict[int, float] = defaultdict(float)
    match: dict[int, TextMatch] = {}
    for ranked in (sorted(words, key=lambda m: -m.score), found):
        for rank, m in enumerate(ranked):
            fused[m.message_id] += 1.0 / (config.rrf_k + rank + 1)
            match.setdefault(m.message_id, m)
    return [match[i].with_score(score) for i, score in fused.items()]


def _with_semantic(
    lexical: list[TextMatch],
    semantic: list[tuple[list[TextMatch], float]],
    config: RankConfig,
    near: NearestLists,
) -> list[TextMatch]:
    """Lexical and semantic candidates fused by rank: weight / (k + rank) from each list."""
    fused: dict[int, float] = defaultdict(float)
    match: dict[int, TextMatch] = {}
    ordered = sorted(lexical, key=lambda m: (-m.score, m.message_id))
    keys = _repeat_keys(ordered, near.same_as if config.repeats and config.near_copies else None)
    for found, weight in [(ordered, 1.0), *semantic]:
        for rank, m in enumerate(_repeats_last(found, config.repeats, keys)):
            fused[m.message_id] += weight / (config.semantic_k + rank + 1)
            match.setdefault(m.message_id, m)
    return [match[i].with_score(score) for i, score in fused.items()]


def _repeats_last(found: list[TextMatch], repeats: int, keys: dict[int, int]) -> list[TextMatch]:
    """`found` with each text's copies beyond the first `repeats` moved to the end (copies:
    equal `keys`, else equal text keys)."""
    if not repeats:
        return found
    kept: list[TextMatch] = []
    later: list[TextMatch] = []
    seen: dict[int, int] = defaultdict(int)
    for m in found:
        key = keys.get(m.message_id, m.text_key)
        if key and seen[key] >= repeats:
            later.append(m)
            continue
        kept.append(m)
        seen[key] += 1
    return kept + later


def _diversify(ranked: list[Ranked], config: RankConfig) -> list[Ranked]:
    """Hits beyond `per_session` from one session, and copies of a text beyond `repeats`,
    go after the others (more sessions and more different messages seen)."""
    if not config.per_session and not config.repeats:
        return ranked
    kept: list[Ranked] = []
    later: list[Ranked] = []
    per_session: dict[str, int] = defaultdict(int)
    per_text: dict[int, int] = defaultdict(int)
    for r in ranked:
        if (config.per_session and per_session[r.session_id] >= config.per_session) or (
            config.repeats and r.text_key and per_text[r.text_key] >= config.repeats
        ):
            later.append(r)
            continue
        kept.append(r)
        per_session[r.session_id] += 1
        per_text[r.text_key] += 1
    return kept + later
