"""The schema of the search views (migrations 3 and 5); queries live in search_index.py.

Why a second FTS index: evidence in a conversation is often spread over a user turn and the
reply next to it ("we adopted a puppy" / "Biscuit is a lovely name for a dog"), and a single
message rarely holds every word of a later question. Each conversational message (user or
assistant, non-empty) gets one row whose columns are its previous conversational message
(`before`), itself (`body`) and its next one (`after`), so BM25 with column weights scores a
message together with its context. The rows are an external-content FTS5 table over a view
computed from `messages`: nothing is stored twice. Triggers keep it in sync; they remove a
row with the exact text it was indexed with, which the view still yields *before* the change.
Since migration 23 new messages are indexed later, in batches (`search_catchup`), and the
views show only what the index holds.
A `tag` column holds a token derived from the scope so a query never leaves its scope, even
inside the index.
"""

from __future__ import annotations

from hermes import unsegmented as scripts

BEFORE_CHARS = 1000
AFTER_CHARS = 1000
BODY_CHARS = 20000

_CONV = "{t}.role IN ('user', 'assistant') AND coalesce({t}.content, '') <> ''"


MARK = "(SELECT upto FROM search_mark)"
"""The highest message id the search index holds (migration 23): later ones wait."""


def conversational(table: str) -> str:
    """SQL true for the rows of `table` (an alias of messages) that the search views index."""
    return _CONV.format(t=table)


def _neighbour(alias: str, row: str, direction: str, *, held: bool = False) -> str:
    """SQL for the id of the nearest conversational message before/after `row` in its
    session; `held`: of those the index holds (migration 23's mark)."""
    op, order = ("<", "DESC") if direction == "prev" else (">", "ASC")
    bound = f" AND {alias}.id <= {MARK}" if held else ""
    return (
        f"(SELECT {alias}.id FROM messages {alias} WHERE {alias}.scope = {row}.scope "
        f"AND {alias}.session_id = {row}.session_id AND {alias}.idx {op} {row}.idx "
        f"AND {_CONV.format(t=alias)}{bound} ORDER BY {alias}.idx {order} LIMIT 1)"
    )


def _window_ids(row: str, *, include_self: bool) -> str:
    ids = [_neighbour("p", row, "prev"), _neighbour("n", row, "next")]
    if include_self:
        ids.insert(1, f"{row}.id")
    return ", ".join(ids)


_COLS = "before, body, after, tag"


def _delete(where: str) -> str:
    return (
        f"INSERT INTO message_windows_fts (message_windows_fts, rowid, {_COLS}) "
        f"SELECT 'delete', w.id, w.before, w.body, w.after, w.tag FROM message_windows w "
        f"WHERE {where};"
    )


def _insert(where: str) -> str:
    return (
        f"INSERT INTO message_windows_fts (rowid, {_COLS}) "
        f"SELECT w.id, w.before, w.body, w.after, w.tag FROM message_windows w WHERE {where};"
    )


_SESSION_EXISTS = (
    "EXISTS (SELECT 1 FROM sessions s WHERE s.scope = {r}.scope AND s.id = {r}.session_id)"
)

M003_MESSAGE_WINDOWS = f"""
CREATE VIEW message_windows (id, scope, session_id, before, body, after, tag) AS
SELECT m.id, m.scope, m.session_id,
    coalesce((SELECT substr(p.content, -{BEFORE_CHARS}) FROM messages p
              WHERE p.scope = m.scope AND p.session_id = m.session_id AND p.idx < m.idx
                AND {_CONV.format(t="p")} ORDER BY p.idx DESC LIMIT 1), ''),
    substr(m.content, 1, {BODY_CHARS}),
    coalesce((SELECT substr(n.content, 1, {AFTER_CHARS}) FROM messages n
              WHERE n.scope = m.scope AND n.session_id = m.session_id AND n.idx > m.idx
                AND {_CONV.format(t="n")} ORDER BY n.idx ASC LIMIT 1), ''),
    's' || lower(hex(m.scope))
FROM messages m
WHERE {_CONV.format(t="m")};
CREATE VIRTUAL TABLE message_windows_fts USING fts5(
    before, body, after, tag, content='message_windows', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER message_windows_bi BEFORE INSERT ON messages
WHEN {_CONV.format(t="new")} BEGIN
    {_delete("w.id IN (" + _window_ids("new", include_self=False) + ")")}
END;
CREATE TRIGGER message_windows_ai AFTER INSERT ON messages
WHEN {_CONV.format(t="new")} BEGIN
    {_insert("w.id IN (" + _window_ids("new", include_self=True) + ")")}
END;
CREATE TRIGGER message_windows_bd BEFORE DELETE ON messages
WHEN {_CONV.format(t="old")} AND {_SESSION_EXISTS.format(r="old")} BEGIN
    {_delete("w.id IN (" + _window_ids("old", include_self=True) + ")")}
END;
CREATE TRIGGER message_windows_ad AFTER DELETE ON messages
WHEN {_CONV.format(t="old")} AND {_SESSION_EXISTS.format(r="old")} BEGIN
    {_insert("w.id IN (" + _window_ids("old", include_self=False) + ")")}
END;
CREATE TRIGGER message_windows_bu BEFORE UPDATE OF content ON messages
WHEN old.role IN ('user', 'assistant') AND old.content IS NOT new.content BEGIN
    {_delete("w.id IN (" + _window_ids("old", include_self=True) + ")")}
END;
CREATE TRIGGER message_windows_au AFTER UPDATE OF content ON messages
WHEN new.role IN ('user', 'assistant') AND old.content IS NOT new.content BEGIN
    {_insert("w.id IN (" + _window_ids("new", include_self=True) + ")")}
END;
CREATE TRIGGER message_windows_session_bd BEFORE DELETE ON sessions BEGIN
    {_delete("w.scope = old.scope AND w.session_id = old.id")}
END;
INSERT INTO message_windows_fts (message_windows_fts) VALUES ('rebuild');
"""
# Deleting a session cascades to its messages after the session row is gone: the session
# trigger above drops all its windows at once, and the per-message triggers stand aside
# (their WHEN clause sees no session), so a cascade never re-indexes rows about to vanish.


def scope_tag(scope: str) -> str:
    """The token the `tag` column holds for a scope (same formula as the views' SQL)."""
    return "s" + scope.encode("utf-8").hex()


# Migration 5: the single-message views. `messages_fts` (every message, stemmed) gives way to
# two indexes over conversational messages only, each tagged with its scope like the windows:
# `message_exact_fts` keeps word forms as written (names, numbers, "ran" vs "run"), and
# `message_trigram_fts` indexes character trigrams of messages written in a script without
# spaces between words (CJK, kana, hangul, thai), which unicode61 would keep as one token.
# The trigram index only holds those messages, so it costs nothing for other text.
_UNSEGMENTED = f"'*{scripts.CLASS}*'"
_TAG = "'s' || lower(hex({t}.scope))"


def _single_view(name: str, where: str) -> str:
    return (
        f"CREATE VIEW {name} (id, content, tag) AS SELECT m.id, substr(m.content, 1, "
        f"{BODY_CHARS}), {_TAG.format(t='m')} FROM messages m WHERE {where.format(t='m')};"
    )


def _single_triggers(table: str, where: str) -> str:
    def ins(t: str) -> str:
        return (
            f"INSERT INTO {table} (rowid, content, tag) VALUES "
            f"({t}.id, substr({t}.content, 1, {BODY_CHARS}), {_TAG.format(t=t)});"
        )

    def dele(t: str) -> str:
        return (
            f"INSERT INTO {table} ({table}, rowid, content, tag) VALUES "
            f"('delete', {t}.id, substr({t}.content, 1, {BODY_CHARS}), {_TAG.format(t=t)});"
        )

    return f"""
CREATE TRIGGER {table}_ai AFTER INSERT ON messages WHEN {where.format(t="new")} BEGIN
    {ins("new")}
END;
CREATE TRIGGER {table}_ad AFTER DELETE ON messages WHEN {where.format(t="old")} BEGIN
    {dele("old")}
END;
CREATE TRIGGER {table}_bu BEFORE UPDATE OF content ON messages
WHEN {where.format(t="old")} AND old.content IS NOT new.content BEGIN
    {dele("old")}
END;
CREATE TRIGGER {table}_au AFTER UPDATE OF content ON messages
WHEN {where.format(t="new")} AND old.content IS NOT new.content BEGIN
    {ins("new")}
END;
"""


_UNSEG_WHERE = _CONV + " AND {t}.content GLOB " + _UNSEGMENTED

M005_MESSAGE_VIEWS = f"""
DROP TRIGGER messages_fts_ai;
DROP TRIGGER messages_fts_ad;
DROP TRIGGER messages_fts_au;
DROP TABLE messages_fts;
{_single_view("message_exact", _CONV)}
CREATE VIRTUAL TABLE message_exact_fts USING fts5(
    content, tag, content='message_exact', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
{_single_triggers("message_exact_fts", _CONV)}
INSERT INTO message_exact_fts (message_exact_fts) VALUES ('rebuild');
{_single_view("message_unsegmented", _UNSEG_WHERE)}
CREATE VIRTUAL TABLE message_trigram_fts USING fts5(
    content, tag UNINDEXED, content='message_unsegmented', content_rowid='id',
    tokenize='trigram'
);
{_single_triggers("message_trigram_fts", _UNSEG_WHERE)}
INSERT INTO message_trigram_fts (message_trigram_fts) VALUES ('rebuild');
"""

# Every FTS table of the search views, for integrity checks and rebuilds.
SEARCH_TABLES = ("message_windows_fts", "message_exact_fts", "message_trigram_fts")


def _with_speaker(sql: str) -> str:
    """Migration 3's windows, rebuilt with a `speaker` column (the message's `name`)."""
    edits = [
        (
            "CREATE VIEW message_windows (id, scope, session_id, before, body, after, tag)",
            "CREATE VIEW message_windows (id, scope, session_id, before, body, after, speaker, tag)",
        ),
        (
            "    's' || lower(hex(m.scope))",
            "    coalesce(m.name, ''),\n    's' || lower(hex(m.scope))",
        ),
        (
            "    before, body, after, tag, content=",
            "    before, body, after, speaker, tag, content=",
        ),
        (_COLS, "before, body, after, speaker, tag"),
        ("w.before, w.body, w.after, w.tag", "w.before, w.body, w.after, w.speaker, w.tag"),
    ]
    for old, new in edits:
        assert old in sql, old
        sql = sql.replace(old, new)
    return sql


# Migration 6: messages keep the speaker's `name` (OpenAI's message field: who said it, in
# a conversation between named people), and the windows index it, so a question naming a
# person favours that person's turns over turns that merely mention the name.
M006_SPEAKERS = (
    "ALTER TABLE messages ADD COLUMN name TEXT;\n"
    + "".join(
        f"DROP TRIGGER message_windows_{t};\n"
        for t in ("bi", "ai", "bd", "ad", "bu", "au", "session_bd")
    )
    + "DROP TABLE message_windows_fts;\nDROP VIEW message_windows;\n"
    + _with_speaker(M003_MESSAGE_WINDOWS)
)


# Migration 23: the search index catches up with the messages instead of being written by
# the turn that stores them. A turn's messages are indexed later, several turns at once
# (`search_catchup`), by the store's writer when it has nothing else to do and by any search
# before it reads. `search_mark.upto` is the highest message id the index holds: every
# message with a higher id is waiting. The views only show what is indexed (ids up to the
# mark, neighbours too), so an external-content delete still finds the exact text a row was
# indexed with; inserts fire no trigger, and a change to a message the index holds is
# written through by the triggers as before. A waiting message changed or deleted needs
# nothing: it is indexed as it is when its turn comes.
_HELD = "{t}.id <= " + MARK
_WINDOW_COLS = "before, body, after, speaker, tag"


def _held_windows(row: str, *, include_self: bool) -> str:
    ids = [_neighbour("p", row, "prev", held=True), _neighbour("n", row, "next", held=True)]
    if include_self:
        ids.insert(1, f"{row}.id")
    return "w.id IN (" + ", ".join(ids) + ")"


def _window_rows(verb: str, where: str) -> str:
    delete = verb == "delete"
    head = "message_windows_fts, rowid" if delete else "rowid"
    first = "'delete', w.id" if delete else "w.id"
    cols = ", ".join(f"w.{c.strip()}" for c in _WINDOW_COLS.split(","))
    return (
        f"INSERT INTO message_windows_fts ({head}, {_WINDOW_COLS}) "
        f"SELECT {first}, {cols} FROM message_windows w WHERE {where};"
    )


def _text_side(alias: str, bound: str, direction: str, chars: int) -> str:
    op, order = ("<", "DESC") if direction == "prev" else (">", "ASC")
    clip = f"-{chars}" if direction == "prev" else f"1, {chars}"
    return (
        f"coalesce((SELECT substr({alias}.content, {clip}) FROM messages {alias} "
        f"WHERE {alias}.scope = m.scope AND {alias}.session_id = m.session_id "
        f"AND {alias}.idx {op} m.idx AND {_CONV.format(t=alias)} AND {bound.format(t=alias)} "
        f"ORDER BY {alias}.idx {order} LIMIT 1), '')"
    )


def _held_single_triggers(table: str, where: str) -> str:
    def row(verb: str, t: str) -> str:
        text = f"substr({t}.content, 1, {BODY_CHARS}), {_TAG.format(t=t)}"
        if verb == "delete":
            return f"INSERT INTO {table} ({table}, rowid, content, tag) VALUES ('delete', {t}.id, {text});"
        return f"INSERT INTO {table} (rowid, content, tag) VALUES ({t}.id, {text});"

    held_old = f"{where.format(t='old')} AND {_HELD.format(t='old')}"
    held_new = f"{where.format(t='new')} AND {_HELD.format(t='new')}"
    changed = "old.content IS NOT new.content"
    return f"""
CREATE TRIGGER {table}_ad AFTER DELETE ON messages WHEN {held_old} BEGIN
    {row("delete", "old")}
END;
CREATE TRIGGER {table}_bu BEFORE UPDATE OF content ON messages
WHEN {held_old} AND {changed} BEGIN
    {row("delete", "old")}
END;
CREATE TRIGGER {table}_au AFTER UPDATE OF content ON messages
WHEN {held_new} AND {changed} BEGIN
    {row("insert", "new")}
END;
"""


def _m023() -> str:
    drops = [f"DROP TRIGGER message_windows_{t};" for t in ("bi", "ai", "bd", "ad", "bu", "au")]
    drops += [
        f"DROP TRIGGER {table}_{t};"
        for table in ("message_exact_fts", "message_trigram_fts")
        for t in ("ai", "ad", "bu", "au")
    ]
    drops += [
        f"DROP VIEW {v};" for v in ("message_windows", "message_exact", "message_unsegmented")
    ]
    conv_old = _CONV.format(t="old")
    held_old = _HELD.format(t="old")
    talk = "{t}.role IN ('user', 'assistant')"
    window_triggers = f"""
CREATE TRIGGER message_windows_bd BEFORE DELETE ON messages
WHEN {conv_old} AND {held_old} AND {_SESSION_EXISTS.format(r="old")} BEGIN
    {_window_rows("delete", _held_windows("old", include_self=True))}
END;
CREATE TRIGGER message_windows_ad AFTER DELETE ON messages
WHEN {conv_old} AND {held_old} AND {_SESSION_EXISTS.format(r="old")} BEGIN
    {_window_rows("insert", _held_windows("old", include_self=False))}
END;
CREATE TRIGGER message_windows_bu BEFORE UPDATE OF content ON messages
WHEN {talk.format(t="old")} AND old.content IS NOT new.content AND {held_old} BEGIN
    {_window_rows("delete", _held_windows("old", include_self=True))}
END;
CREATE TRIGGER message_windows_au AFTER UPDATE OF content ON messages
WHEN {talk.format(t="new")} AND old.content IS NOT new.content AND {_HELD.format(t="new")} BEGIN
    {_window_rows("insert", _held_windows("new", include_self=True))}
END;
"""
    held_m = _HELD.format(t="m")
    views = f"""
CREATE VIEW message_windows (id, scope, session_id, {_WINDOW_COLS}) AS
SELECT m.id, m.scope, m.session_id,
    {_text_side("p", _HELD, "prev", BEFORE_CHARS)},
    substr(m.content, 1, {BODY_CHARS}),
    {_text_side("n", _HELD, "next", AFTER_CHARS)},
    coalesce(m.name, ''),
    {_TAG.format(t="m")}
FROM messages m
WHERE {_CONV.format(t="m")} AND {held_m};
{_single_view("message_exact", _CONV + " AND " + _HELD)}
{_single_view("message_unsegmented", _UNSEG_WHERE + " AND " + _HELD)}
"""
    return "\n".join(
        [
            *drops,
            "DROP TABLE search_index_paused;",
            "CREATE TABLE search_mark (one INTEGER PRIMARY KEY CHECK (one = 1), "
            "upto INTEGER NOT NULL);",
            "INSERT INTO search_mark (one, upto) VALUES (1, coalesce((SELECT seq FROM "
            "sqlite_sequence WHERE name = 'messages'), 0));",
            views,
            window_triggers,
            _held_single_triggers("message_exact_fts", _CONV),
            _held_single_triggers("message_trigram_fts", _UNSEG_WHERE),
        ]
    )


M023_DEFERRED_INDEX = _m023()
