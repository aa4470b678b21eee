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


def query_words(text: str) -> frozenset[str]:
    """Every lowercased word of the query (names included), for matching speakers."""
    return frozenset(_WORD.findall(text[:MAX_QUERY_CHARS].lower()))
