"""SQLite side of `Store.health`: deep for an operator, cheap for a probe.

A deep check (`hermes doctor`, `hermes db status`) runs `PRAGMA quick_check` and FTS5's own
integrity check of every search table now. At a million messages that is ~15 s, and the
index check takes the write lock for most of it. The server's `/health` is probed every few
seconds, so it never does that: it compares the search index's row counts with the messages
(~0.1 s at 1M, on a read-only connection of its own), and reports the file's quick_check as
last run in the background, at most every INTEGRITY_EVERY_S.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import urllib.parse
from contextlib import closing
from pathlib import Path
from typing import Any

from hermes.store.migrations import current_version
from hermes.store.search_contract import Searcher, SearchIndexHealth

INTEGRITY_EVERY_S = 600.0  # how often a probe's health has the file checked again
INTEGRITY_WAIT_S = 0.5  # how long a probe waits for a check it started (a small file: done)
CHECKING = "checking"  # no quick_check has finished yet in this process
REINDEX = "run `hermes sessions reindex` to rebuild it"
SEARCHABLE_COUNT = (
    "SELECT count(*) FROM messages INDEXED BY messages_searchable "
    "WHERE role IN ('user', 'assistant') AND coalesce(content, '') <> '' "
    "AND id <= (SELECT upto FROM search_mark)"
)
"""The rows of `message_exact` (its WHERE, word for word: the messages the index holds,
not those waiting for it), counted from migration 20's partial index: the view itself reads
every message's text (~0.5 s at a million), and the planner, seeing the index hold nearly
every row, would scan the table; INDEXED BY keeps it on the small index (~0.1 s)."""


class SQLiteHealthMixin:
    """Mixed into SQLiteStore: `health`, `count_search_index`."""

    path: Path
    _conn: sqlite3.Connection
    _lock: threading.RLock

    search: Searcher

    def health(self, *, deep: bool = True) -> dict[str, Any]:
        try:
            with self._lock:
                version = current_version(self._conn)
                mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
                quick = self._conn.execute("PRAGMA quick_check").fetchone()[0] if deep else ""
        except sqlite3.DatabaseError as exc:
            return {"ok": False, "path": str(self.path), "error": str(exc)}
        if deep:
            index = self.search.check_search_index()
        else:
            index, quick = self.count_search_index(), self._last_integrity()
        return {
            "ok": quick in ("ok", CHECKING) and index.ok,
            "path": str(self.path),
            "schema_version": version,
            "journal_mode": mode,
            "integrity": quick,
            "search_index": index.detail,
        }

    def count_search_index(self) -> SearchIndexHealth:
        """The search tables' rows against the messages they index: an index out of step
        with the messages (rows missing, or left behind) shows here; damage inside FTS5's
        own structures only in `check_search_index`."""
        try:
            with closing(self._reader()) as conn:
                messages = conn.execute(SEARCHABLE_COUNT).fetchone()[0]
                held = {
                    table: conn.execute(f"SELECT count(*) FROM {table}_docsize").fetchone()[0]
                    for table in ("message_windows_fts", "message_exact_fts")
                }
                # unsegmented messages are costly to count (a pattern over every text):
                # only rows left behind by messages gone or changed are looked for
                held_over = conn.execute(
                    "SELECT count(*) FROM message_trigram_fts_docsize d WHERE NOT EXISTS "
                    "(SELECT 1 FROM message_unsegmented u WHERE u.id = d.id)"
                ).fetchone()[0]
        except sqlite3.DatabaseError as exc:
            return SearchIndexHealth(ok=False, detail=f"the search index cannot be read ({exc})")
        wrong = [f"{t} holds {n:,} rows" for t, n in held.items() if n != messages]
        if held_over:
            wrong.append(f"message_trigram_fts holds {held_over:,} rows of no message")
        if wrong:
            detail = (
                f"the search index does not match the {messages:,} messages ({'; '.join(wrong)})"
            )
            return SearchIndexHealth(ok=False, detail=f"{detail}; {REINDEX}")
        return SearchIndexHealth(ok=True, detail="ok", rows=int(messages))

    def _reader(self) -> sqlite3.Connection:
        """A read-only connection of its own: a long read never holds the store's lock, and
        in WAL mode never keeps a writer waiting."""
        uri = "file:" + urllib.parse.quote(str(self.path)) + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    def _last_integrity(self) -> str:
        """The last background quick_check's answer, starting a new one when it is old."""
        state: dict[str, Any] = self.__dict__.setdefault(
            "_integrity", {"lock": threading.Lock(), "last": None, "thread": None}
        )
        with state["lock"]:
            last: tuple[float, str] | None = state["last"]
            thread: threading.Thread | None = state["thread"]
            stale = last is None or time.monotonic() - last[0] > INTEGRITY_EVERY_S
            if stale and (thread is None or not thread.is_alive()):
                thread = threading.Thread(
                    target=self._check_integrity, args=(state,), name="hermes-quick-check"
                )
                thread.daemon = True
                state["thread"] = thread
                thread.start()
        if last is None and thread is not None:
            thread.join(INTEGRITY_WAIT_S)
            last = state["last"]
        return last[1] if last is not None else CHECKING

    def _check_integrity(self, state: dict[str, Any]) -> None:
        try:
            with closing(self._reader()) as conn:
                result = str(conn.execute("PRAGMA quick_check").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            result = f"quick_check failed: {exc}"
        with state["lock"]:
            state["last"] = (time.monotonic(), result)
