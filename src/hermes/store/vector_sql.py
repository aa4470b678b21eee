"""SQL the stores share: which messages are conversational (they get vectors and search
rows), which only ask, what text is embedded, and which of a big scope's messages are new
enough to be searched by meaning. Each rule is written here once, for every backend."""

from __future__ import annotations

from collections.abc import Mapping

from hermes.store.search_contract import QUESTION_MARKS, SENTENCE_ENDS, WHEN_WORDS


def spoken(table: str) -> str:
    """The text of `table`'s message as embedded (`table`: the alias of `messages`): without
    a transcript's "Name: " opening when it names the message's speaker (the name would
    dominate the embedding; who spoke is ranked from `name` itself)."""
    t = table
    return (
        f"CASE WHEN {t}.name IS NOT NULL AND substr({t}.content, 1, length({t}.name) + 2) = "
        f"{t}.name || ': ' THEN substr({t}.content, length({t}.name) + 3) ELSE {t}.content END"
    )


SPOKEN = spoken("m")


def conversational(table: str = "m") -> str:
    """A message said by a person or the assistant, with text: `table` is the alias of
    `messages` in the query ("" for none, as in a table's own generated column)."""
    col = f"{table}." if table else ""
    return f"{col}role IN ('user', 'assistant') AND coalesce({col}content, '') <> ''"


CONVERSATIONAL = conversational("m")
# `store.search_contract.only_asks` in PostgreSQL: a question and nothing else (ends with "?", no "." or "!")
PG_ONLY_ASKS = (
    f"(m.content ~ '[{QUESTION_MARKS}][[:space:]]*$' AND m.content !~ '[{SENTENCE_ENDS}]')"
)

# `store.search_contract.tells_when` in PostgreSQL (\y: a word boundary)
PG_TELLS_WHEN = f"(m.content ~* '\\y(?:{WHEN_WORDS})\\y')"
# `store.search_contract.asks_back` in PostgreSQL: ends with a question mark
PG_ASKS_BACK = f"(m.content ~ '[{QUESTION_MARKS}][[:space:]]*$')"


def from_starts(
    starts: Mapping[str, int] | None, mark: str, scope: str | None, column: str = "m"
) -> tuple[str, tuple[object, ...]]:
    """A condition (with its parameters) keeping only messages at or after their scope's
    start (`VectorStore.newest_starts`), for a query of one `scope` or (None) of all: ""
    when none has one. One scope's start is a range of ids, which the primary key finds."""
    if scope is not None:
        start = (starts or {}).get(scope)
        return (f" AND {column}.id >= {mark}", (start,)) if start else ("", ())
    if not starts:
        return "", ()
    cases = " ".join(f"WHEN {mark} THEN {mark}" for _ in starts)
    params = tuple(v for name, start in starts.items() for v in (name, start))
    return f" AND {column}.id >= CASE {column}.scope {cases} ELSE 0 END", params


def whole_only_query(
    mark: str,
    length: str,
    model: str,
    size: int,
    scope: str | None,
    after_id: int,
    limit: int,
    starts: Mapping[str, int] | None,
) -> tuple[str, tuple[object, ...]]:
    """`VectorStore.whole_only` for a backend whose parameter mark is `mark` and whose byte
    length function is `length`: the statement and its parameters."""
    where = f" AND v.scope = {mark}" if scope is not None else ""
    newest, newer = from_starts(starts, mark, scope)
    sql = (
        f"SELECT m.id, m.scope, {SPOKEN}, v.vec FROM message_vectors v "
        f"JOIN messages m ON m.id = v.id "
        f"WHERE v.model = {mark} AND {length}(v.vec) = {mark} AND v.id > {mark}{where}{newest} "
        f"ORDER BY v.id LIMIT {mark}"
    )
    scoped = (scope,) if scope is not None else ()
    return sql, (model, size, after_id, *scoped, *newer, limit)


# A message's window is embedded with the conversational turns before it in its session
# (`hermes.recall.windows.SPANS`): this many of them at most.
WINDOW_TURNS = 2


def next_turns(old: str) -> str:
    """The ids of the `WINDOW_TURNS` conversational messages after the message `old` (a
    trigger's OLD row) in its session: the messages whose windows hold its text."""
    return (
        f"SELECT n.id FROM messages n WHERE n.scope = {old}.scope "
        f"AND n.session_id = {old}.session_id AND n.idx > {old}.idx AND {conversational('n')} "
        f"ORDER BY n.idx LIMIT {WINDOW_TURNS}"
    )


def pending_windows_query(
    mark: str, model: str, scope: str | None, after_id: int, limit: int
) -> tuple[str, tuple[object, ...]]:
    """Messages with a vector of `model` but no window vectors of it, by id after
    `after_id`: (id, scope, session id, index, spoken text)."""
    where = f" AND v.scope = {mark}" if scope is not None else ""
    sql = (
        f"SELECT m.id, m.scope, m.session_id, m.idx, {SPOKEN} FROM message_vectors v "
        f"JOIN messages m ON m.id = v.id "
        f"WHERE v.model = {mark} AND v.id > {mark}{where} AND NOT EXISTS "
        f"(SELECT 1 FROM window_vectors w WHERE w.id = v.id AND w.model = v.model) "
        f"ORDER BY v.id LIMIT {mark}"
    )
    scoped = (scope,) if scope is not None else ()
    return sql, (model, after_id, *scoped, limit)


def turns_before_query(mark: str) -> str:
    """The spoken texts of the `WINDOW_TURNS` conversational turns before a message (given
    its scope, session and index), newest first."""
    return (
        f"SELECT {SPOKEN} FROM messages m WHERE m.scope = {mark} AND m.session_id = {mark} "
        f"AND m.idx < {mark} AND {CONVERSATIONAL} ORDER BY m.idx DESC LIMIT {WINDOW_TURNS}"
    )
