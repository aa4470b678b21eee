"""What a search query asks for: its content words and whose words it is about.

Pure text analysis, no store access, shared by the ranking and the snippets.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_CHARS = 2048
MAX_TERMS = 24

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


def all_terms(text: str) -> list[str]:
    seen: list[str] = []
    for word in _WORD.findall(text[:MAX_QUERY_CHARS].lower()):
        if word not in seen:
            seen.append(word)
    return seen[:MAX_TERMS]


_NOW = frozenset({"now", "currently", "current", "nowadays", "anymore", "still", "latest"})


def asks_about_now(query: str) -> bool:
    """Whether a question asks what is true now ("Where does Jon work now?", "Is she still
    in Leeds?"), which the newest of several statements answers."""
    words = _WORD.findall(query[:MAX_QUERY_CHARS].lower())
    return bool(_NOW.intersection(words)) or "these days" in " ".join(words)


def asked_about(text: str, speakers: frozenset[str] | set[str]) -> frozenset[str]:
    """Whose turns answer a question: of the scope's `speakers` (lowercased) that it names,
    the first. A question names its subject first ("What does Melanie think about
    Caroline's decision?", "How does Nate feel about Joanna's setbacks?"): the second name
    is what the subject talks about, and boosting its speaker's turns too ranks what they
    said of themselves above the answer."""
    for word in _WORD.findall(text[:MAX_QUERY_CHARS].lower()):
        if word in speakers:
            return frozenset({word})
    return frozenset()


_ASKS_WHEN = re.compile(r"^\W*(?:when|how long ago|what (?:date|day|month|year|time))\b", re.I)


def asks_when(query: str) -> bool:
    """Whether a question asks when something happened ("When did Jon open his studio?"):
    the turn that tells it says when (`search_contract.tells_when`), where later mentions
    of the same event ("the studio is doing great") do not."""
    return _ASKS_WHEN.match(query[:MAX_QUERY_CHARS]) is not None


def query_words(text: str) -> frozenset[str]:
    """Every lowercased word of the query (names included), for matching speakers."""
    return frozenset(_WORD.findall(text[:MAX_QUERY_CHARS].lower()))


_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"
_PERIODS = [
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I), (3, 2, 1)),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I), (3, 1, 2)),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I), (2, 1, 0)),
    ("year", re.compile(rf"\b(?:in|during|since|of|from|throughout)\s+{_YEAR}\b", re.I), (1, 0, 0)),
]


def named_period(text: str) -> tuple[float, float] | None:
    """The time a question names, as a [start, end) range of UTC epoch seconds: a day
    ("on 8 May 2023", "May 8th, 2023"), a month ("in May 2023") or a year ("in 2023").
    Relative phrases ("last week") and bare months are left alone: they need a "now"."""
    from datetime import UTC, datetime, timedelta

    head = text[:MAX_QUERY_CHARS]
    for kind, pattern, (y, m, d) in _PERIODS:
        found = pattern.search(head)
        if found is None:
            continue
        year = int(found.group(y))
        month = _MONTHS[found.group(m).lower()] if m else 1
        try:
            start = datetime(year, month, int(found.group(d)) if d else 1, tzinfo=UTC)
        except ValueError:
            return None
        if kind == "day":
            end = start + timedelta(days=1)
        elif kind == "month":
            end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        else:
            end = datetime(year + 1, 1, 1, tzinfo=UTC)
        # a day's turns may be stamped in any timezone: half a day of slack each side
        slack = 43_200 if kind == "day" else 0
        return start.timestamp() - slack, end.timestamp() + slack
    return None
