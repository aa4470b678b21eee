"""What the search index says of given messages, through the public contract only.

The contract has no "describe these ids" call (nothing in production needs one); tests that
check a vector or a match describes its message as the index does find each id's place in
the scope's sessions and ask `store.search.messages_at` about those places."""

from __future__ import annotations

from collections.abc import Sequence

from hermes.store.base import Store
from hermes.store.search_contract import TextMatch


def described(store: Store, scope: str, message_ids: Sequence[int]) -> list[TextMatch]:
    """The conversational messages of `scope` among `message_ids`, in id order (score 0)."""
    wanted = set(message_ids)
    places = [
        (m.session_id, m.index)
        for s in store.list_sessions(scope, limit=10_000)
        for m in store.get_messages(scope, s.id)
        if m.id in wanted
    ]
    return sorted(store.search.messages_at(scope, places), key=lambda m: m.message_id)
