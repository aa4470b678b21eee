"""`session_search`: find, scroll, read and browse past conversations of the caller's scope.

One tool, four shapes chosen by the arguments given:
- `query` → discovery: ranked sessions, each with a snippet, the matching message and its
  neighbours, and the session's first and last turns as bookends;
- `session_id` + `around` → scroll: the messages around one message;
- `session_id` → read: the whole session (a long one: its head and tail);
- nothing → browse: the most recent sessions with a preview.
Everything is confined to `ToolContext.scope`, and the live session is never returned (it is
already in the model's context). Ranking lives in ranking.py; the store only matches words.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from hermes.errors import HermesError
from hermes.memory.notes import NotesStore, open_notes
from hermes.observability import timings, tracing
from hermes.recall.component import Recall
from hermes.recall.query import query_terms
from hermes.recall.ranking import SemanticSearch, rank_messages
from hermes.store.base import MessageRecord, SessionRecord, Store
from hermes.text import clip
from hermes.tools.registry import ToolContext, ToolError, tool

MAX_LIMIT = 10
READ_ALL = 30  # sessions up to this many messages are read whole
READ_HEAD, READ_TAIL = 20, 10
MATCH_CHARS, NEIGHBOUR_CHARS, TOOL_CHARS, READ_CHARS = 1500, 600, 300, 1000
CONTEXT = 2  # messages shown on each side of a discovery match
BOOKEND = 2  # first/last conversational messages shown as bookends


@dataclass(slots=True)
class SearchHit:
    """One ranked message: where it is (session id + message index) and why it matched."""

    session_id: str
    message_index: int
    role: str
    snippet: str
    score: float
    message_id: int = 0
    timestamp: float = 0.0


def search_hits(
    store: Store,
    scope: str,
    query: str,
    *,
    limit: int = 10,
    exclude: Sequence[str] = (),
    semantic: SemanticSearch | None = None,
) -> list[SearchHit]:
    """Ranked message hits with highlighted snippets."""
    ranked = rank_messages(
        store.search, scope, query, limit=limit, exclude_sessions=exclude, semantic=semantic
    )
    snippets = store.search.message_snippets(
        scope, query_terms(query), [r.message_id for r in ranked]
    )
    return [
        SearchHit(
            session_id=r.session_id,
            message_index=r.index,
            role=r.role,
            snippet=snippets.get(r.message_id) or "",
            score=round(r.score, 4),
            message_id=r.message_id,
            timestamp=r.timestamp,
        )
        for r in ranked
    ]


WARM_UP_QUESTION = "What did we talk about last time?"


def warm_up(store: Store, scope: str, semantic: SemanticSearch | None) -> None:
    """One search whose result is dropped. A process's first search loads the scope's
    vectors, runs the model once and fills per-process caches (~0.7 s at 50,000 vectors,
    then ~20 ms more than later searches); a command about to search times what follows."""
    rank_messages(store.search, scope, WARM_UP_QUESTION, semantic=semantic)


def timed_search(
    store: Store, scope: str, query: str, limit: int, semantic: SemanticSearch | None = None
) -> dict[str, Any]:
    """The `hermes sessions search --json` document for one query."""
    started = time.perf_counter()
    hits = search_hits(store, scope, query, limit=limit, semantic=semantic)
    took = (time.perf_counter() - started) * 1000
    return {
        "query": query,
        "hits": [
            {
                "session_id": h.session_id,
                "message_index": h.message_index,
                "role": h.role,
                "snippet": h.snippet,
                "score": h.score,
            }
            for h in hits
        ],
        "took_ms": round(took, 2),
    }


# ----------------------------------------------------------------------------- rendering


@dataclass
class _View:
    """What the tool needs from its context: store, scope, live session, clock."""

    store: Store
    scope: str
    live: str
    tz: ZoneInfo | None
    notes: NotesStore | None = None  # for entries archived out of the notes
    semantic: SemanticSearch | None = None  # nearest messages by meaning, when available

    def when(self, ts: float | None) -> str | None:
        if not ts:
            return None
        return datetime.fromtimestamp(ts, self.tz).astimezone(self.tz).strftime("%Y-%m-%d %H:%M")

    def session(self, session_id: str) -> SessionRecord:
        if session_id == self.live:
            raise ToolError("that is the current conversation; it is already in your context")
        record = self.store.get_session(self.scope, session_id)
        if record is None:
            raise ToolError(
                f"no past session {session_id!r}; call session_search without "
                "arguments to list recent sessions, or with a query to find one"
            )
        return record


def _message(m: MessageRecord, limit: int) -> dict[str, Any]:
    item: dict[str, Any] = {"index": m.index, "role": m.role}
    if m.role == "tool":
        item["tool"] = m.tool_name
        item["content"] = clip(m.content, min(limit, TOOL_CHARS))
    else:
        item["content"] = clip(m.content, limit)
    if m.tool_calls:
        item["tool_calls"] = [c.get("function", {}).get("name") for c in m.tool_calls]
    return item


def _conversational(messages: list[MessageRecord]) -> list[MessageRecord]:
    return [m for m in messages if m.role in ("user", "assistant") and m.content]


def _bookends(view: _View, record: SessionRecord, shown: set[int]) -> dict[str, Any]:
    head = _conversational(view.store.get_messages(view.scope, record.id, start=0, end=8))
    tail_start = max(0, record.message_count - 8)
    tail = _conversational(view.store.get_messages(view.scope, record.id, start=tail_start))
    first = [m for m in head[:BOOKEND] if m.index not in shown]
    last = [m for m in tail[-BOOKEND:] if m.index not in shown and m not in head[:BOOKEND]]
    return {
        "bookend_start": [_message(m, NEIGHBOUR_CHARS) for m in first],
        "bookend_end": [_message(m, NEIGHBOUR_CHARS) for m in last],
    }


def _discover(view: _View, query: str, limit: int) -> dict[str, Any]:
    hits = search_hits(
        view.store,
        view.scope,
        query,
        limit=limit * 8,
        exclude=[view.live],
        semantic=view.semantic,
    )
    grouped: dict[str, list[SearchHit]] = {}
    for h in hits:
        grouped.setdefault(h.session_id, []).append(h)
    results = []
    for session_id, session_hits in list(grouped.items())[:limit]:
        best = session_hits[0]
        record = view.store.get_session(view.scope, session_id)
        if record is None:
            continue
        around = view.store.get_messages(
            view.scope,
            session_id,
            start=max(0, best.message_index - CONTEXT),
            end=best.message_index + CONTEXT + 1,
        )
        messages = [
            _message(m, MATCH_CHARS if m.index == best.message_index else NEIGHBOUR_CHARS)
            for m in around
        ]
        results.append(
            {
                "session_id": session_id,
                "title": record.title,
                "source": record.source,
                "when": view.when(best.timestamp),
                "session_started": view.when(record.started_at),
                "score": best.score,
                "match_index": best.message_index,
                "snippet": best.snippet,
                "other_matches": [h.message_index for h in session_hits[1:6]],
                "messages": messages,
                "message_count": record.message_count,
                **_bookends(view, record, {m.index for m in around}),
            }
        )
    archived = view.notes.search_archive(query_terms(query)) if view.notes else []
    found: dict[str, Any] = {"shape": "discover", "query": query, "results": results}
    if archived:
        found["archived_notes"] = archived  # entries that left the notes (memories/ARCHIVE.md)
    return {
        **found,
        "hint": (
            "No match; try other words (synonyms, names) or browse recent sessions."
            if not results and not archived
            else "To see more of a session: session_search(session_id=..., around=<index>)."
        ),
    }


def _scroll(view: _View, session_id: str, around: int, window: int) -> dict[str, Any]:
    record = view.session(session_id)
    if not 0 <= around < max(1, record.message_count):
        raise ToolError(
            f"session {session_id!r} has messages 0 to {record.message_count - 1}; "
            f"{around} is outside that"
        )
    start = max(0, around - window)
    messages = view.store.get_messages(view.scope, session_id, start=start, end=around + window + 1)
    return {
        "shape": "scroll",
        "session_id": session_id,
        "title": record.title,
        "when": view.when(record.started_at),
        "around": around,
        "messages": [_message(m, READ_CHARS) for m in messages],
        "messages_before": start,
        "messages_after": max(0, record.message_count - around - window - 1),
    }


def _read(view: _View, session_id: str) -> dict[str, Any]:
    record = view.session(session_id)
    count = record.message_count
    result: dict[str, Any] = {
        "shape": "read",
        "session_id": session_id,
        "title": record.title,
        "source": record.source,
        "when": view.when(record.started_at),
        "message_count": count,
    }
    if count <= READ_ALL:
        result["messages"] = [
            _message(m, READ_CHARS) for m in view.store.get_messages(view.scope, session_id)
        ]
        return result
    head = view.store.get_messages(view.scope, session_id, start=0, end=READ_HEAD)
    tail = view.store.get_messages(view.scope, session_id, start=count - READ_TAIL)
    result["messages"] = [_message(m, READ_CHARS) for m in head]
    result["omitted"] = (
        f"messages {READ_HEAD} to {count - READ_TAIL - 1} not shown; scroll "
        f"with session_id and around=<index>"
    )
    result["tail"] = [_message(m, READ_CHARS) for m in tail]
    return result


def _browse(view: _View, limit: int) -> dict[str, Any]:
    sessions = [
        s for s in view.store.list_sessions(view.scope, limit=limit + 1) if s.id != view.live
    ]
    items = []
    for s in sessions[:limit]:
        first = _conversational(view.store.get_messages(view.scope, s.id, start=0, end=6))
        preview = next((m.content for m in first if m.role == "user"), None)
        items.append(
            {
                "session_id": s.id,
                "title": s.title,
                "source": s.source,
                "started": view.when(s.started_at),
                "last_active": view.when(s.updated_at),
                "message_count": s.message_count,
                "preview": clip(preview, 80, squash=True),
            }
        )
    return {"shape": "browse", "sessions": items}


def _recall(ctx: ToolContext) -> Recall:
    """The runtime's recall component; a context made without a runtime gets one of its own,
    kept in its services so later calls share its semantic index."""
    found = ctx.services.find(Recall)
    return found if found is not None else ctx.services.provide(Recall(ctx.settings, ctx.store))


def _view(ctx: ToolContext) -> _View:
    tz_name = ctx.settings.timezone
    try:
        tz = ZoneInfo(tz_name) if tz_name else None
    except (KeyError, ValueError):
        tz = None
    notes = open_notes(ctx.settings, ctx.scope, ctx.store)
    return _View(
        store=ctx.store,
        scope=ctx.scope,
        live=ctx.session_id,
        tz=tz,
        notes=notes,
        semantic=_recall(ctx).semantic(wait=False),
    )


@tool(name="session_search")
def session_search(
    ctx: ToolContext,
    query: str | None = None,
    session_id: str | None = None,
    around: int | None = None,
    window: int = 5,
    limit: int | None = None,
) -> dict[str, Any]:
    """Search and read your past conversations with this user: when they refer to something discussed before, or before asking them to repeat themselves. `query` (keywords: names, places, distinctive words; try synonyms if nothing fits) finds the best-matching sessions with the matching message, its neighbours and the session's first and last turns; `session_id` + `around` shows the messages around one message (to scroll, re-anchor on the first or last index shown); `session_id` alone reads a session; no arguments lists recent sessions.

    Args:
        session_id: a session from an earlier result, to read or scroll.
        around: message index to centre on.
        window: messages shown on each side when scrolling (1-20).
        limit: sessions to return (1-10; default 3 when searching, 10 when listing).
    """
    view = _view(ctx)
    window = min(max(window, 1), 20)
    if query is not None and query.strip():
        if session_id is not None:
            raise ToolError("give either query or session_id, not both")
        with (
            timings.timed("recall_seconds"),
            tracing.span("hermes.recall", **{"hermes.recall.query": tracing.content(query)}),
        ):
            return _discover(view, query.strip(), min(max(limit or 3, 1), MAX_LIMIT))
    if session_id is not None:
        if around is not None:
            return _scroll(view, session_id, around, window)
        return _read(view, session_id)
    if around is not None:
        raise ToolError("around needs a session_id")
    return _browse(view, min(max(limit or MAX_LIMIT, 1), MAX_LIMIT))


class BatchFormatError(HermesError, ValueError):
    """Lines of a batch file that are not queries; nothing was searched."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:10]))
        self.problems = problems


def parse_batch(lines: Sequence[str] | Any, default_limit: int) -> list[tuple[str, int]]:
    """`{"query": "...", "limit"?: k}` per line (blank lines skipped) → (query, limit) pairs."""
    queries: list[tuple[str, int]] = []
    problems: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            problems.append(
                f'line {number}: expected an object like {{"query": "...", "limit": 10}}'
            )
            continue
        limit = item.get("limit", default_limit)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            problems.append(f"line {number}: limit must be a whole number from 1 to 100")
            continue
        queries.append((item["query"], limit))
    if problems:
        raise BatchFormatError(problems)
    return queries
