"""JSONL export/import of sessions: one session per line, idempotent per session id."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hermes.errors import HermesError
from hermes.scopes import ID_PATTERN
from hermes.store.base import NewMessage, NewSession, Store
from hermes.store.session_dates import title_time


class ImportFormatError(HermesError, ValueError):
    """Lines of an import file that are not sessions; nothing was imported."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:10]))
        self.problems = problems


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("must be a number of seconds or an ISO-8601 timestamp")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO-8601 timestamp") from None
        if parsed.tzinfo is None:
            raise ValueError(f"{value!r} has no timezone offset")
        return parsed.timestamp()
    raise ValueError("must be a number of seconds or an ISO-8601 timestamp")


class ImportedMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None
    timestamp: float | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    name: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=300)

    _ts = field_validator("timestamp", mode="before")(classmethod(lambda cls, v: _epoch(v)))


class ImportedSession(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=ID_PATTERN.pattern)
    title: str | None = Field(default=None, max_length=200)
    started_at: float | None = None
    source: str = "import"
    messages: list[ImportedMessage]

    _ts = field_validator("started_at", mode="before")(classmethod(lambda cls, v: _epoch(v)))


@dataclass
class ImportReport:
    imported: int = 0
    skipped: int = 0
    messages: int = 0


def parse_jsonl(lines: Iterable[str]) -> list[ImportedSession]:
    """Parse every line first, so a bad file imports nothing; errors name the line number."""
    sessions: list[ImportedSession] = []
    problems: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:  # the fast path: pydantic parses and validates the JSON in one step
            sessions.append(ImportedSession.model_validate_json(line))
            continue
        except ValidationError:
            pass  # parse again below to name what is wrong
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(data, dict):
            problems.append(f"line {number}: expected a JSON object with id and messages")
            continue
        try:
            sessions.append(ImportedSession.model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "line"
            problems.append(f"line {number}: {where}: {err['msg']}")
    if problems:
        raise ImportFormatError(problems)
    return sessions


IMPORT_BATCH_MESSAGES = 20_000


def import_sessions(
    store: Store,
    scope: str,
    sessions: list[ImportedSession],
    on_progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Create each session unless its id already exists in the scope (then skip it).

    Sessions go to the store in batches of about IMPORT_BATCH_MESSAGES messages, each batch
    one transaction: fast, and a failure loses at most the batch being written.
    `on_progress(n)` hears of every n sessions written (a progress bar).
    """
    report = ImportReport()
    batch: list[NewSession] = []
    size = 0
    for s in sessions:
        batch.append(_new_session(s))
        size += len(s.messages)
        if size >= IMPORT_BATCH_MESSAGES:
            _flush(store, scope, batch, report)
            if on_progress is not None:
                on_progress(len(batch))
            batch, size = [], 0
    _flush(store, scope, batch, report)
    if on_progress is not None and batch:
        on_progress(len(batch))
    return report


def _flush(store: Store, scope: str, batch: list[NewSession], report: ImportReport) -> None:
    if not batch:
        return
    done = set(store.import_sessions(scope, batch))
    report.imported += len(done)
    report.skipped += len(batch) - len(done)
    report.messages += sum(len(s.messages) for s in batch if s.id in done)


# "Caroline: I ran my first half marathon!" — a transcript that names its speakers inline
_INLINE_SPEAKER = re.compile(r"([A-Z][\w.'-]{0,30}(?: [A-Z][\w.'-]{0,30}){0,2}): \S")
INLINE_SHARE = 0.8  # of the conversational messages, for a session to count as a transcript
INLINE_MAX_SPEAKERS = 4


def inline_speakers(messages: list[ImportedMessage]) -> list[str | None]:
    """Each message's speaker when the session names none but writes transcript lines
    ("Name: text") — most of its turns open that way with a few distinct names; else Nones.
    The search then knows who said what (a question naming a person favours their turns)."""
    none: list[str | None] = [None] * len(messages)
    if any(m.name for m in messages):
        return none
    found = [
        _INLINE_SPEAKER.match(m.content or "") if m.role in ("user", "assistant") else None
        for m in messages
    ]
    talk = sum(1 for m in messages if m.role in ("user", "assistant") and m.content)
    hits = [f for f in found if f is not None]
    names = {f.group(1) for f in hits}
    if not talk or len(hits) < INLINE_SHARE * talk or len(names) > INLINE_MAX_SPEAKERS:
        return none
    return [f.group(1) if f is not None else None for f in found]


def _new_session(s: ImportedSession) -> NewSession:
    """The session to store; with no start given, a title that is a date is its start, and a
    message with no time of its own took place when its session did (not at the import)."""
    speakers = inline_speakers(s.messages)
    started = s.started_at if s.started_at is not None else title_time(s.title)
    return NewSession(
        id=s.id,
        source=s.source,
        title=s.title,
        started_at=started,
        messages=[
            NewMessage(
                role=m.role,
                content=m.content,
                timestamp=m.timestamp if m.timestamp is not None else started,
                tool_calls=m.tool_calls,
                tool_call_id=m.tool_call_id,
                tool_name=m.tool_name,
                name=m.name or speaker,
                model=m.model,
            )
            for m, speaker in zip(s.messages, speakers, strict=True)
        ],
    )


def export_sessions(
    store: Store, scope: str, session_ids: list[str] | None = None
) -> Iterator[str]:
    """Yield one JSON line per session of the scope (all, or the ids given)."""
    if session_ids is None:
        records = []
        offset = 0
        while batch := store.list_sessions(scope, limit=500, offset=offset):
            records.extend(batch)
            offset += len(batch)
        records.sort(key=lambda r: r.started_at)
    else:
        records = [r for sid in session_ids if (r := store.get_session(scope, sid)) is not None]
    for record in records:
        messages = [
            {"role": m.role, "content": m.content, "timestamp": m.timestamp, **m.optional_fields()}
            for m in store.get_messages(scope, record.id)
        ]
        line = {
            "id": record.id,
            "title": record.title,
            "started_at": record.started_at,
            "source": record.source,
            "messages": messages,
        }
        yield json.dumps(line, ensure_ascii=False)
