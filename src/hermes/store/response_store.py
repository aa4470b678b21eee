"""Stored `/v1/responses` objects, per scope, so `previous_response_id` and
`GET /v1/responses/{id}` work on any replica.

A stored response is the object the client received plus the Hermes session it belongs to:
the transcript itself lives in the session store, this only maps a response id onto it. The
objects are the store's shared records (kind `response`: state.db alone, PostgreSQL for
every replica), bounded (oldest dropped past `limit`); losing one loses no conversation.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.store.base import Store
from hermes.store.records import records_of

DEFAULT_LIMIT = 10_000
KIND = "response"


@dataclass(frozen=True)
class StoredResponse:
    id: str
    session_id: str | None
    body: dict[str, Any]


class ResponseStore:
    """Response objects keyed by (scope, id); one scope never reads another's. `legacy`
    names an older version's `responses.db`: its responses are copied in on first use,
    then the file is renamed `responses.db.imported` (nothing a client stored is lost)."""

    def __init__(
        self, store: Store, *, limit: int = DEFAULT_LIMIT, legacy: Path | None = None
    ) -> None:
        self.records = records_of(store)
        self.limit = limit
        self._legacy = legacy
        self._legacy_lock = threading.Lock()

    def _import_legacy(self) -> None:
        with self._legacy_lock:
            path, self._legacy = self._legacy, None
            if path is None or not path.is_file():
                return
            conn = sqlite3.connect(path)
            try:
                rows = conn.execute(
                    "SELECT scope, id, session_id, body FROM responses ORDER BY created_at"
                ).fetchall()
            except sqlite3.Error:
                rows = []
            finally:
                conn.close()
            for scope, rid, session_id, body in rows:
                wrapped = {"session_id": session_id, "body": json.loads(body)}
                self.records.add_record(KIND, scope, rid, wrapped)
            path.rename(path.with_name(path.name + ".imported"))

    def _save(self, scope: str, response: StoredResponse) -> None:
        self._import_legacy()
        body = {"session_id": response.session_id, "body": response.body}
        self.records.put_record(KIND, scope, response.id, body)
        self.records.trim_records(KIND, self.limit)

    def _get(self, scope: str, response_id: str) -> StoredResponse | None:
        self._import_legacy()
        found = self.records.get_record(KIND, scope, response_id)
        if found is None:
            return None
        return StoredResponse(response_id, found.body.get("session_id"), found.body["body"])

    def forget_scope(self, scope: str) -> int:
        """Delete every stored response of `scope` (`hermes users forget`); blocking."""
        return self.records.delete_records(KIND, scope)

    async def save(self, scope: str, response: StoredResponse) -> None:
        await asyncio.to_thread(self._save, scope, response)

    async def get(self, scope: str, response_id: str) -> StoredResponse | None:
        return await asyncio.to_thread(self._get, scope, response_id)

    async def delete(self, scope: str, response_id: str) -> bool:
        removed = await asyncio.to_thread(self.records.delete_records, KIND, scope, [response_id])
        return removed > 0
