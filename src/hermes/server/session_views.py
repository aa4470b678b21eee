"""What `/api/sessions` shows of the store (blocking helpers, run in a worker thread): a
session as JSON, the search over titles and messages, a page of messages with compression
and undo marked, and a fork."""

from __future__ import annotations

from typing import Any

from hermes.recall.ranking import SemanticSearch
from hermes.recall.search import search_hits
from hermes.store.base import SessionRecord, Store

HITS_PER_SESSION = 3  # message hits asked for per session wanted (several hits share one)


def session_json(r: SessionRecord) -> dict[str, Any]:
    return {
        "id": r.id,
        "title": r.title,
        "source": r.source,
        "started_at": r.started_at,
        "updated_at": r.updated_at,
        "ended_at": r.ended_at,
        "parent_session_id": r.parent_session_id,
        "message_count": r.message_count,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
    }


def search_sessions(
    store: Store,
    scope: str,
    query: str,
    source: str | None,
    limit: int,
    offset: int,
    semantic: SemanticSearch | None = None,
) -> list[dict[str, Any]]:
    """Sessions whose title holds every word of `query` (newest first), then those whose
    messages match it (best first, with the best message's snippet). With `semantic` (search
    by meaning) titles are not scanned and messages near the query's meaning count too."""
    words = query.casefold().split()
    results: dict[str, dict[str, Any]] = {}
    wanted = offset + limit
    for r in store.sessions_titled(scope, words, wanted) if semantic is None else []:
        if source and r.source != source:
            continue
        results[r.id] = {**session_json(r), "match": {"in": "title"}}
    hits = search_hits(
        store, scope, query, limit=min(wanted * HITS_PER_SESSION, 500), semantic=semantic
    )
    for hit in hits:
        if hit.session_id in results or len(results) >= wanted:
            continue
        record = store.get_session(scope, hit.session_id)
        if record is None or (source and record.source != source):
            continue
        results[hit.session_id] = {
            **session_json(record),
            "match": {
                "in": "messages",
                "message_index": hit.message_index,
                "role": hit.role,
                "snippet": hit.snippet,
            },
        }
    return list(results.values())[offset:wanted]


def message_page(
    store: Store, scope: str, session_id: str, offset: int, limit: int
) -> dict[str, Any]:
    """Messages [offset, offset+limit) with `hidden` (undone) and `compressed` (summarised
    in the prompt by the latest compaction) marked; the compactions, the latest with its
    summary; the hidden ranges."""
    rows = store.get_messages(scope, session_id, start=offset, end=offset + limit)
    hidden = store.hidden_ranges(scope, session_id)
    latest = store.latest_compaction(scope, session_id)
    compressions = store.compression_markers(scope, session_id)
    if latest is not None:
        for marker in compressions:
            if marker.get("seq") == latest.seq:
                marker["summary"] = latest.summary
    messages = [
        {
            "id": m.id,
            "index": m.index,
            "role": m.role,
            "content": m.content,
            "timestamp": m.timestamp,
            "hidden": any(a <= m.index < b for a, b in hidden),
            "compressed": latest is not None and latest.head_end <= m.index < latest.upto_idx,
            **m.optional_fields(),
        }
        for m in rows
    ]
    return {
        "messages": messages,
        "compressions": compressions,
        "hidden_ranges": [list(r) for r in hidden],
    }


def forked(
    store: Store, scope: str, original: SessionRecord, new_id: str, title: str | None
) -> SessionRecord | None:
    """A copy of `original`'s messages in a new session whose parent it is; None when
    `new_id` is taken."""
    if store.get_session(scope, new_id) is not None:
        return None
    store.ensure_session(
        scope,
        new_id,
        source=original.source,
        title=title or original.title,
        parent_session_id=original.id,
    )
    copies = [m.as_new() for m in store.get_messages(scope, original.id)]
    if copies:
        store.append_messages(scope, new_id, copies)
    return store.get_session(scope, new_id)
