"""Stored `/v1/responses` objects, per scope, so `previous_response_id` and
`GET /v1/responses/{id}` work.

A stored response is the object the client received plus the Hermes session it belongs to:
the transcript itself lives in the session store, this only maps a response id onto it. It is
a small SQLite file of its own (`$HERMES_HOME/responses.db`, WAL) rather than part of the
`Store` contract: it is an API-surface index, bounded (oldest dropped past `limit`), and
losing it loses no conversation. Every call runs in a worker thread with its own connection.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_LIMIT = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    session_id TEXT,
    created_at REAL NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (scope, id)
);
CREATE INDEX IF NOT EXISTS responses_created ON responses (created_at);
"""


@dataclass(frozen=True)
class StoredResponse:
    id: str
    session_id: str | None
    body: dict[str, Any]


class ResponseStore:
    """Response objects keyed by (scope, id); one scope never reads another's."""

    def __init__(self, path: Path, *, limit: int = DEFAULT_LIMIT) -> None:
        self.path = path
        self.limit = limit
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            self._ready = True
        return conn

    def _save(self, scope: str, response: StoredResponse) -> None:
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                (scope, response.id, response.session_id, time.time(), json.dumps(response.body)),
            )
            conn.execute(
                "DELETE FROM responses WHERE rowid IN (SELECT rowid FROM responses "
                "ORDER BY created_at DESC LIMIT -1 OFFSET ?)",
                (self.limit,),
            )
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _get(self, scope: str, response_id: str) -> StoredResponse | None:
        conn = self._connect()
        try:
            row = conn.execute(
                "SELECT session_id, body FROM responses WHERE scope = ? AND id = ?",
                (scope, response_id),
            ).fetchone()
        finally:
            conn.close()
        if row is None:
            return None
        return StoredResponse(response_id, row[0], json.loads(row[1]))

    def _delete(self, scope: str, response_id: str) -> bool:
        conn = self._connect()
        try:
            cur = conn.execute(
                "DELETE FROM responses WHERE scope = ? AND id = ?", (scope, response_id)
            )
            return cur.rowcount > 0
        finally:
            conn.close()

    def forget_scope(self, scope: str) -> int:
        """Delete every stored response of `scope` (`hermes users forget`); blocking."""
        if not self.path.exists():
            return 0
        conn = self._connect()
        try:
            return conn.execute("DELETE FROM responses WHERE scope = ?", (scope,)).rowcount
        finally:
            conn.close()

    async def save(self, scope: str, response: StoredResponse) -> None:
        await asyncio.to_thread(self._save, scope, response)

    async def get(self, scope: str, response_id: str) -> StoredResponse | None:
        return await asyncio.to_thread(self._get, scope, response_id)

    async def delete(self, scope: str, response_id: str) -> bool:
        return await asyncio.to_thread(self._delete, scope, response_id)
