"""Bringing the search index up to date with the messages (migration 23's catch-up).

A turn stores its messages and is done: the search index holds every message up to
`search_mark.upto`, and the ones after it wait here. Indexed later, several turns of a session
at once, a message's window is written once instead of once per neighbour that arrives, and
FTS5 writes one segment per batch instead of one per turn; above all the work is off the
turn's path. `catch_up` is called by the store's writer when it has nothing else to do, and
by every search before it reads, so a search always sees every message stored before it.

Must run inside a write transaction: the windows of indexed messages next to waiting ones
are deleted while the mark still hides the waiting ones (an external-content delete needs
the exact text a row was indexed with), then the mark moves, then those windows and the
waiting messages' own rows are written with their new neighbours.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from hermes.store.search_schema import MARK, conversational

log = logging.getLogger(__name__)

_CONV = conversational("messages")

DUE_AT = 32
"""Waiting messages that make the writer catch up as soon as it is idle. Fewer wait up to
DUE_AFTER_S for more: a piece costs about the same for one turn as for sixteen of them."""
DUE_AFTER_S = 0.25
PIECE_IDS = 256
"""Message ids per piece of the writer's catch-up: what a turn's write may wait behind."""
RETRY_AFTER_S = 1.0
_WINDOW_COLS = "before, body, after, speaker, tag"

# indexed conversational neighbours of a session's waiting run: the one before its first
# waiting message, the one after its last, and any indexed between (only rows changed out of
# order could put them there; re-indexing one that did not need it is harmless)
_NEIGHBOURS = f"""
WITH runs AS (
    SELECT scope, session_id, min(idx) AS lo, max(idx) AS hi FROM messages
    WHERE id > :upto AND id <= :new AND {_CONV} GROUP BY scope, session_id
)
SELECT (SELECT p.id FROM messages p WHERE p.scope = r.scope AND p.session_id = r.session_id
        AND p.idx < r.lo AND {conversational("p")} AND p.id <= :upto
        ORDER BY p.idx DESC LIMIT 1) FROM runs r
UNION
SELECT (SELECT n.id FROM messages n WHERE n.scope = r.scope AND n.session_id = r.session_id
        AND n.idx > r.hi AND {conversational("n")} AND n.id <= :upto
        ORDER BY n.idx ASC LIMIT 1) FROM runs r
UNION
SELECT b.id FROM runs r JOIN messages b ON b.scope = r.scope AND b.session_id = r.session_id
    AND b.idx > r.lo AND b.idx < r.hi
WHERE {conversational("b")} AND b.id <= :upto
"""

_WINDOWS_OF = "FROM message_windows w WHERE w.id IN (SELECT value FROM json_each(?))"
_DELETE_WINDOWS = (
    f"INSERT INTO message_windows_fts (message_windows_fts, rowid, {_WINDOW_COLS}) "
    f"SELECT 'delete', w.id, w.before, w.body, w.after, w.speaker, w.tag {_WINDOWS_OF}"
)
_INSERT_WINDOWS = (
    f"INSERT INTO message_windows_fts (rowid, {_WINDOW_COLS}) "
    f"SELECT w.id, w.before, w.body, w.after, w.speaker, w.tag {_WINDOWS_OF}"
)


def waiting(conn: sqlite3.Connection) -> tuple[int, int]:
    """(the mark, the highest message id given out): ids between them wait to be indexed."""
    row = conn.execute(
        f"SELECT {MARK}, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0)"
    ).fetchone()
    return int(row[0]), int(row[1])


def catch_up(conn: sqlite3.Connection, most: int | None = None) -> int:
    """Index the waiting messages, at most `most` ids of them; how many ids the mark moved.

    The caller holds a write transaction (see the module's docstring)."""
    upto, last = waiting(conn)
    if last <= upto:
        return 0
    new = last if most is None else min(last, upto + most)
    talk = [
        int(r[0])
        for r in conn.execute(
            f"SELECT id FROM messages INDEXED BY messages_searchable "
            f"WHERE {_CONV} AND messages.id > ? AND messages.id <= ?",
            (upto, new),
        )
    ]
    neighbours: list[int] = []
    if talk:
        neighbours = [
            int(r[0])
            for r in conn.execute(_NEIGHBOURS, {"upto": upto, "new": new})
            if r[0] is not None
        ]
        if neighbours:
            conn.execute(_DELETE_WINDOWS, (json.dumps(neighbours),))
    conn.execute("UPDATE search_mark SET upto = ?", (new,))
    if talk:
        conn.execute(_INSERT_WINDOWS, (json.dumps(neighbours + talk),))
        for table, view in (
            ("message_exact_fts", "message_exact"),
            ("message_trigram_fts", "message_unsegmented"),
        ):
            conn.execute(
                f"INSERT INTO {table} (rowid, content, tag) "
                f"SELECT id, content, tag FROM {view} WHERE id > ? AND id <= ?",
                (upto, new),
            )
    return new - upto


def hold_all(conn: sqlite3.Connection) -> None:
    """Move the mark past every message without indexing: for a caller about to rebuild or
    to index a range itself. The caller holds a write transaction."""
    conn.execute(
        "UPDATE search_mark SET upto = "
        "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0)"
    )


class Backlog:
    """The writer's idle work (`group_commit.IdleWork`): the messages this process stored
    that wait for the index, caught up a piece at a time when the writer has nothing else.

    The count is a hint (another process, or a search, may index them first); a piece reads
    the real mark and sets the count from it."""

    def __init__(
        self, write: Callable[[], AbstractContextManager[sqlite3.Connection]], count: int = 0
    ) -> None:
        """`count`: the messages waiting already (a previous run's, when the store opens)."""
        self._write = write
        self._lock = threading.Lock()
        self._count = count
        self._since = time.monotonic()
        self._not_before = 0.0

    def added(self, messages: int) -> None:
        """`messages` more were stored (committed or about to be, by the writer itself)."""
        with self._lock:
            if not self._count:
                self._since = time.monotonic()
            self._count += messages

    def due(self) -> float | None:
        with self._lock:
            if not self._count:
                return None
            now = time.monotonic()
            wait = 0.0 if self._count >= DUE_AT else self._since + DUE_AFTER_S - now
            return max(wait, self._not_before - now)

    def run_piece(self) -> None:
        try:
            with self._write() as conn:
                catch_up(conn, most=PIECE_IDS)
                upto, last = waiting(conn)
        except Exception as exc:  # a busy or failing database: searches still catch up
            log.warning("the search index could not catch up: %s", exc)
            with self._lock:
                self._not_before = time.monotonic() + RETRY_AFTER_S
            return
        with self._lock:
            self._count = max(0, last - upto)
            self._since = time.monotonic()
