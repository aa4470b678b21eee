"""Where a profile's rows live when profiles share one PostgreSQL database (SPEC §16)."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit


def profile_schema(profile: str) -> str:
    """The PostgreSQL schema of a named profile sharing a database with others: an unquoted
    identifier (`-` becomes `$`, which profile names never contain, so no two collide)."""
    return "hermes_profile_" + profile.replace("-", "$")


def with_search_path(url: str, schema: str) -> str:
    """`url` whose connections work in `schema` first (then `public`, for the extensions):
    libpq's `options=-c search_path=…`, added to any options the URL already has."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "options"]
    given = dict(parse_qsl(parts.query, keep_blank_values=True)).get("options", "")
    options = f"{given} -c search_path={schema},public".strip()
    query.append(("options", options))  # libpq reads %20 as a space, not +
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))
