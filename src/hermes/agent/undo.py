"""Taking an exchange back (`/undo`, `/retry`): the last user message and everything after it
leave the session's prompt, and stay in the store (listed, searchable, exportable).

Backend-neutral: only the `Store` contract (`hidden_ranges`, `hide_messages`) is used, so it
works the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.agent.policy import visible
from hermes.store.base import Store


@dataclass(frozen=True)
class Exchange:
    """Messages [start, end) of a session: one user message and what answered it."""

    start: int
    end: int
    user_text: str


def last_exchange(store: Store, scope: str, session_id: str) -> Exchange | None:
    """The newest exchange still in the prompt, or None when there is nothing to take back.

    Exchanges already folded into a compression summary are out of reach: the summary
    cannot forget them, so pretending to would mislead the user."""
    session = store.get_session(scope, session_id)
    if session is None or session.message_count == 0:
        return None
    compaction = store.latest_compaction(scope, session_id)
    floor = compaction.upto_idx if compaction is not None else 0
    hidden = store.hidden_ranges(scope, session_id)
    records = visible(store.get_messages(scope, session_id, start=floor), hidden)
    users = [r for r in records if r.role == "user"]
    if not users:
        return None
    last = users[-1]
    return Exchange(last.index, session.message_count, last.content or "")


def undo_last_exchange(store: Store, scope: str, session_id: str) -> Exchange | None:
    """Hide the newest exchange from the prompt; returns it (None: nothing to undo)."""
    exchange = last_exchange(store, scope, session_id)
    if exchange is not None:
        store.hide_messages(scope, session_id, start=exchange.start, end=exchange.end)
    return exchange
