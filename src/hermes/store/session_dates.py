"""When a session happened, read from a title that is only a date ("1:56 pm on 8 May, 2023").

Imported transcripts often carry the date of each conversation as its title and no
timestamps; without this every message would be stamped with the moment of the import, and
"what did she do in May 2023?" or "what is true now?" could not use time at all. A title
counts only when all of it is a date with day, month and year (a time of day may come with
it); "Trip planning" or "Budget 2023" is no date.
"""

from __future__ import annotations

from datetime import UTC, datetime

from dateutil import parser as dateparser  # type: ignore[import-untyped]

_CONNECTORS = frozenset({"on", "at", "the", "of", ","})
_DEFAULTS = (datetime(2001, 1, 1, tzinfo=UTC), datetime(2002, 2, 2, tzinfo=UTC))
MAX_TITLE_CHARS = 80


def title_time(title: str | None) -> float | None:
    """Epoch seconds of the date a title states, or None when it states none in full.

    A title without a zone is read as UTC (an import gives no other); one parsed with a
    connector word ("on", "at") besides the date still counts, any other word does not."""
    if not title or len(title) > MAX_TITLE_CHARS or not any(c.isdigit() for c in title):
        return None
    found: list[datetime] = []
    for default in _DEFAULTS:
        try:
            parsed, skipped = dateparser.parse(title, default=default, fuzzy_with_tokens=True)
        except (ValueError, OverflowError):
            return None
        if any(t.strip().lower() not in _CONNECTORS for t in skipped if t.strip()):
            return None
        found.append(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))
    a, b = found
    if (a.year, a.month, a.day) != (b.year, b.month, b.day):
        return None  # day, month or year missing: filled in from the defaults
    return a.timestamp()
