"""Ranking past messages for a free-text query, confined to one scope.

Plain BM25 over single messages misses evidence phrased with other word forms or spread over
neighbouring turns. What this does instead, each step measured by bench/recall.py:
- porter stemming (in the index) and stopword removal (question words carry no evidence);
- BM25 over each message *with* its neighbouring turns, neighbours weighted lower
  (store/search_index.py), so context finds the turn and the turn's own words still count most;
- a role prior: a first-person question ("my dog") is about what the user said, a
  second-person one ("what did you suggest") about what the assistant said;
- recency as a tie-breaker (an updated fact's newer statement wins a tie);
- at most two hits per session before other sessions get their turn.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from hermes.store.search_index import Candidate, WindowWeights, window_candidates

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_CHARS = 2048
MAX_TERMS = 24
MAX_CANDIDATES = 5000

# Function words and question scaffolding: they match almost every message and carry no
# evidence, yet under OR-semantics they pull in (and reward) long irrelevant messages.
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are aren as at be because been before
being below between both but by can cannot could couldn did didn do does doesn doing don down
during each either else ever every few for from further get gets got had hadn has hasn have
haven having he her here hers herself him himself his how i if in into is isn it its itself
just let ll many me mine more most much must mustn my myself no nor not now of off on once only
or other ought our ours ourselves out over own re s same shall she should shouldn so some such
t than that the their theirs them themselves then there these they this those through to too
under until up upon us ve very was wasn we were weren what whats when where whether which
while who whom whose why will with won would wouldn you your yours yourself yourselves
tell told remember recall say said mention mentioned thing things something anything kind
please know like also really d m o y
""".split()
)


def query_terms(text: str, *, max_terms: int = MAX_TERMS) -> list[str]:
    """Content words of a query, lowercased and de-duplicated, in order of appearance."""
    seen: list[str] = []
    for word in _WORD.findall(text[:MAX_QUERY_CHARS].lower()):
        if (len(word) > 1 or word.isdigit()) and word not in seen:
            seen.append(word)
    content = [w for w in seen if w not in STOPWORDS]
    return (content or seen)[:max_terms]


@dataclass(frozen=True, slots=True)
class RankConfig:
    """Knobs of the ranking; the defaults are what bench/recall.py measured best.

    `body` and `session` add the message's own BM25 and its session's total to the window
    score (both measured to hurt: they reward messages that merely repeat the query's words,
    such as earlier questions on the same topic); they stay for the benchmark's ablations.
    """

    weights: WindowWeights = field(default_factory=WindowWeights)
    candidates: int = 200
    body: float = 0.0
    session: float = 0.0
    role: float = 0.5
    recency: float = 0.01
    per_session: int = 2
    stopwords: bool = True


DEFAULT_CONFIG = RankConfig()


@dataclass(slots=True)
class Ranked:
    message_id: int
    session_id: str
    index: int
    role: str
    timestamp: float
    score: float


def _load(
    conn: sqlite3.Connection, scope: str, ids: Sequence[int]
) -> dict[int, tuple[str, int, str, float]]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT id, session_id, idx, role, timestamp FROM messages "
        f"WHERE scope = ? AND id IN ({marks})",
        (scope, *ids),
    ).fetchall()
    return {int(r[0]): (r[1], int(r[2]), r[3], float(r[4])) for r in rows}


_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours"})
_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself"})


def likely_role(query: str) -> str | None:
    """Whose words a query is about: "what did you suggest" → assistant, "my dog" → user."""
    words = set(_WORD.findall(query[:MAX_QUERY_CHARS].lower()))
    if words & _SECOND_PERSON:
        return "assistant"
    if words & _FIRST_PERSON:
        return "user"
    return None


def _fuse(
    cands: list[Candidate],
    meta: dict[int, tuple[str, int, str, float]],
    config: RankConfig,
    role: str | None,
) -> list[Ranked]:
    """Scores normalised to the best candidate, a role prior, recency to break ties."""
    if not cands:
        return []
    top_window = max(c.window_score for c in cands) or 1.0
    top_body = max(c.body_score for c in cands) or 1.0
    per_session: dict[str, float] = defaultdict(float)
    for c in cands:
        per_session[meta[c.message_id][0]] += c.window_score
    top_session = max(per_session.values()) or 1.0
    times = sorted({meta[c.message_id][3] for c in cands})
    time_pos = {t: i / max(1, len(times) - 1) for i, t in enumerate(times)}
    out: list[Ranked] = []
    for c in cands:
        sid, idx, r, ts = meta[c.message_id]
        score = c.window_score / top_window
        score += config.body * c.body_score / top_body
        score += config.session * per_session[sid] / top_session
        if role is not None and r == role:
            score *= 1.0 + config.role
        score += config.recency * time_pos[ts]
        out.append(Ranked(c.message_id, sid, idx, r, ts, score))
    out.sort(key=lambda x: (-x.score, -x.timestamp, x.message_id))
    return out


def rank_messages(
    conn: sqlite3.Connection,
    scope: str,
    query: str,
    *,
    limit: int = 10,
    exclude_sessions: Sequence[str] = (),
    config: RankConfig = DEFAULT_CONFIG,
) -> list[Ranked]:
    """The `limit` best user/assistant messages of `scope` for `query`, best first."""
    terms = query_terms(query) if config.stopwords else _all_terms(query)
    if not terms or limit <= 0:
        return []
    excluded = set(exclude_sessions)
    size = max(config.candidates, limit * 4)
    while True:
        found = window_candidates(conn, scope, terms, limit=size, weights=config.weights)
        meta = _load(conn, scope, [c.message_id for c in found])
        cands = [c for c in found if c.message_id in meta and meta[c.message_id][0] not in excluded]
        # an excluded (live) session may fill the candidates: look deeper, boundedly
        if len(cands) >= limit or len(found) < size or size >= MAX_CANDIDATES:
            break
        size *= 4
    ranked = _fuse(cands, meta, config, likely_role(query))
    return _diversify(ranked, config)[:limit]


def _diversify(ranked: list[Ranked], config: RankConfig) -> list[Ranked]:
    """Hits beyond `per_session` from one session go after the others (more sessions seen)."""
    if not config.per_session:
        return ranked
    kept: list[Ranked] = []
    later: list[Ranked] = []
    count: dict[str, int] = defaultdict(int)
    for r in ranked:
        if count[r.session_id] >= config.per_session:
            later.append(r)
            continue
        kept.append(r)
        count[r.session_id] += 1
    return kept + later


def _all_terms(text: str) -> list[str]:
    seen: list[str] = []
    for word in _WORD.findall(text[:MAX_QUERY_CHARS].lower()):
        if word not in seen:
            seen.append(word)
    return seen[:MAX_TERMS]
