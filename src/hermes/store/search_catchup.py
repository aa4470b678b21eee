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
import sqlite3

from hermes.store.search_schema import MARK, conversational

_CONV = conversational("messages")

PIECE_IDS = 256
"""Message ids per piece of the writer's catch-up: what a turn's write may wait behind."""
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


def index_piece(conn: sqlite3.Connection) -> int:
    """One piece of the writer's catch-up (`index_backlog.Backlog`): at most PIECE_IDS
    ids; how many ids still wait after it. The caller holds a write transaction."""
    catch_up(conn, most=PIECE_IDS)
    upto, last = waiting(conn)
    return last - upto
