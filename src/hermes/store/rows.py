"""Row tuples for bulk imports, shared by the backends (same columns, same order)."""

from __future__ import annotations

import json
from typing import Any

from hermes.store.base import NewMessage, NewSession, ScopeStats, SessionRecord

SCOPE_STATS_SQL = (
    "SELECT scope, COUNT(*), COALESCE(SUM(message_count), 0), MAX(updated_at) "
    "FROM sessions GROUP BY scope ORDER BY scope"
)
"""Sessions, messages and last activity per scope: the same SQL on both backends."""


def scope_stats_from(rows: list[tuple[Any, ...]]) -> list[ScopeStats]:
    return [ScopeStats(r[0], int(r[1]), int(r[2]), r[3]) for r in rows]


def session_row(scope: str, s: NewSession, now: float) -> tuple[Any, ...]:
    """(scope, id, source, title, started_at, updated_at, message_count, user_turns)."""
    first_ts = next((m.timestamp for m in s.messages if m.timestamp is not None), None)
    started = s.started_at or first_ts or now
    last_ts = max((m.timestamp for m in s.messages if m.timestamp is not None), default=started)
    user_turns = sum(m.role == "user" for m in s.messages)
    return (scope, s.id, s.source, s.title, started, last_ts, len(s.messages), user_turns)


def message_row(scope: str, sid: str, idx: int, m: NewMessage, now: float) -> tuple[Any, ...]:
    """(scope, session_id, idx, role, content, tool_calls, tool_call_id, tool_name,
    timestamp, token_count, name, model)."""
    return (
        scope,
        sid,
        idx,
        m.role,
        m.content,
        json.dumps(m.tool_calls) if m.tool_calls else None,
        m.tool_call_id,
        m.tool_name,
        m.timestamp if m.timestamp is not None else now,
        m.token_count,
        m.name,
        m.model,
    )


def title_patterns(words: list[str]) -> list[str]:
    """LIKE patterns (escape character `\\`) for the ASCII words a title must hold; words
    with other letters are checked by `titled` alone (SQL case rules differ for them)."""
    out = []
    for word in words:
        if word.isascii():
            escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            out.append(f"%{escaped}%")
    return out


def titled(records: list[SessionRecord], words: list[str], limit: int) -> list[SessionRecord]:
    """The records whose casefolded title holds every casefolded word, at most `limit`."""
    wanted = [w.casefold() for w in words]
    found = [r for r in records if r.title and all(w in r.title.casefold() for w in wanted)]
    return found[:limit]
