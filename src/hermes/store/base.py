"""The storage contract: sessions, messages, compactions, leases and learned context windows;
search and vectors are recall's contracts (`hermes.store.search_contract`), served as sub-objects. SQLite (`sqlite:///…`, the embedded default) and PostgreSQL (`postgresql://…`, shared
by several replicas) implement it; no SQL leaks past `hermes.store`."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from hermes.errors import HermesError
from hermes.scopes import DEFAULT_SCOPE
from hermes.store.search_contract import Searcher, VectorStore


class StoreError(HermesError):
    """The store refused an operation (bad id, missing session, corrupt database)."""


class StoreUnavailableError(StoreError):
    """The database cannot be reached right now (server down, network, pool exhausted);
    nothing was written. The server answers 503 and recovers when the database is back."""


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """Which numbered migrations a database has, and which this version would apply."""

    backend: str
    url: str
    applied: list[tuple[int, str, float]]
    pending: list[tuple[int, str]]

    @property
    def version(self) -> int:
        return max((v for v, _, _ in self.applied), default=0)


@dataclass(slots=True)
class SessionRecord:
    scope: str
    id: str
    source: str
    started_at: float
    updated_at: float
    title: str | None = None
    parent_session_id: str | None = None
    ended_at: float | None = None
    message_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    last_prompt_tokens: int | None = None
    system_prompt: str | None = None
    user_turns: int = 0
    hidden: list[tuple[int, int]] | None = field(default=None, compare=False, repr=False)
    """The session's hidden ranges (`hidden_ranges`) when read in the row's transaction
    (`begin_turn`), so a turn needs no second read; None: not read."""


@dataclass(frozen=True, slots=True)
class ScopeStats:
    """What one scope holds in the store (`GET /api/users`, `hermes users list`)."""

    scope: str
    sessions: int
    messages: int
    last_active: float | None


@dataclass(slots=True)
class NewMessage:
    """A message about to be stored; the store assigns its id and position."""

    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    timestamp: float | None = None
    token_count: int | None = None
    name: str | None = None  # who said it, when several people talk (OpenAI's `name`)
    model: str | None = None  # the model that wrote an assistant message (fallbacks switch)


@dataclass(slots=True)
class NewSession:
    """A whole past session to import (bulk): its messages are stored in order, indexed 0…"""

    id: str
    source: str
    messages: list[NewMessage]
    title: str | None = None
    started_at: float | None = None


@dataclass(slots=True)
class MessageRecord:
    id: int
    scope: str
    session_id: str
    index: int
    role: str
    content: str | None
    timestamp: float
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    token_count: int | None = None
    name: str | None = None
    model: str | None = None

    def as_new(self) -> NewMessage:
        """The message as it would be stored again (a fork, a copy to another database)."""
        return NewMessage(
            role=self.role,
            content=self.content,
            tool_calls=self.tool_calls,
            tool_call_id=self.tool_call_id,
            tool_name=self.tool_name,
            timestamp=self.timestamp,
            token_count=self.token_count,
            name=self.name,
            model=self.model,
        )

    def optional_fields(self) -> dict[str, Any]:
        """`tool_calls`, `tool_call_id`, `tool_name`, `name` and `model` (the model that
        answered), those that are set: what a JSON view of the message adds to role, content
        and time."""
        extras = {
            "tool_calls": self.tool_calls,
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "name": self.name,
            "model": self.model,
        }
        return {k: v for k, v in extras.items() if v}

    def to_openai(self) -> dict[str, Any]:
        """The message as the Chat Completions API expects it."""
        msg: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        if self.role == "tool":
            msg["tool_call_id"] = self.tool_call_id
        return msg


@dataclass(frozen=True, slots=True)
class Compaction:
    """The prompt view of a session: messages [0, head_end) + summary + messages [upto_idx, …).

    Originals are never deleted; a compaction is recorded beside them, so compressed
    messages stay searchable."""

    scope: str
    session_id: str
    seq: int
    head_end: int
    upto_idx: int
    summary: str
    kind: str
    created_at: float


@dataclass(frozen=True, slots=True)
class Lease:
    """A named cross-process lease and who holds it (one agent turn on one session)."""

    name: str
    holder: str


@dataclass(slots=True)
class DocumentEdit:
    """One document being edited under its lock: `text` as found (None: no such document);
    set `new_text` to write it when the edit ends (None: leave it as it was)."""

    scope: str
    name: str
    text: str | None
    new_text: str | None = None


class DocumentStore(Protocol):
    """Small text documents per scope, each edited under its own lock: what lives in files
    under `$HERMES_HOME` in embedded mode (notes, cron jobs and run outputs) lives here when
    the database is shared by several replicas. Names are paths (`memories/MEMORY.md`)."""

    def read_document(self, scope: str, name: str) -> str | None: ...

    def edit_document(
        self, scope: str, name: str, *, skip_locked: bool = False
    ) -> AbstractContextManager[DocumentEdit | None]:
        """Lock the document (even before it exists) for a read-modify-write; other editors
        wait, or with `skip_locked` get None at once while someone else holds it."""
        ...

    def list_documents(self, scope: str, prefix: str) -> list[str]:
        """Names in `scope` that start with `prefix`, sorted."""
        ...

    def delete_documents(self, scope: str, names: Sequence[str]) -> int: ...

    def document_scopes(self, name: str) -> list[str]:
        """The scopes that have a document called `name`."""
        ...


@dataclass(frozen=True, slots=True)
class IdempotentAnswer:
    """A stored answer to an idempotent request (status, body, headers)."""

    status: int
    body: bytes
    headers: dict[str, str]


IdempotencyClaim = Literal["new", "pending", "done", "conflict"]


class IdempotencyStore(Protocol):
    """`Idempotency-Key`s shared by every replica: the first request with a key claims it,
    a retry of the same request anywhere gets the stored answer."""

    def claim_idempotency(
        self, scope: str, key: str, fingerprint: str, ttl_seconds: float
    ) -> tuple[IdempotencyClaim, IdempotentAnswer | None]:
        """`new` (the caller runs the request, then `finish`es or `release`s it),
        `pending` (another process runs it: ask again), `done` (with the answer) or
        `conflict` (the key was used with a different request). Keys older than
        `ttl_seconds` count as unused."""
        ...

    def finish_idempotency(self, scope: str, key: str, answer: IdempotentAnswer) -> None: ...

    def release_idempotency(self, scope: str, key: str, fingerprint: str) -> None:
        """Forget a claim whose request failed (a retry runs it again)."""
        ...


RunStatus = Literal["queued", "running", "waiting_for_approval", "completed", "failed", "cancelled"]
RUN_FINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


@dataclass(slots=True)
class RunRecord:
    """One `/v1/runs` run as every replica sees it: its state and, once over, its outcome."""

    id: str
    scope: str
    status: RunStatus
    created_at: float
    updated_at: float
    session_id: str | None = None
    model: str | None = None
    output: str | None = None
    usage: dict[str, int] | None = None
    error: dict[str, Any] | None = None


class RunEvent(NamedTuple):
    """One event of a run, numbered from 1 in the order it happened (`data` is its JSON)."""

    seq: int
    data: dict[str, Any]


class RunStore(Protocol):
    """Runs and their events, so a run's status and replay are readable on any replica (the
    live stream stays in the process that runs it). Every read is confined to one scope."""

    def save_run(self, run: RunRecord, events: Sequence[RunEvent] = ()) -> None:
        """Insert or update the run and append `events`, in one transaction. A run already
        over in the store stays as it is (its outcome is final, whoever wrote it)."""
        ...

    def fail_run(self, scope: str, run_id: str, error: dict[str, Any]) -> RunRecord | None:
        """Mark an unfinished run failed with `error` and append its `run.failed` event, in
        one transaction (the replica running it is gone); None when it was already over."""
        ...

    def get_run(self, scope: str, run_id: str) -> RunRecord | None: ...

    def run_events(
        self, scope: str, run_id: str, *, after: int = 0, limit: int = 1000
    ) -> list[RunEvent]:
        """The run's events numbered above `after`, in order."""
        ...

    def delete_runs(self, scope: str) -> int:
        """Forget every run of `scope` and its events; returns runs removed."""
        ...


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """Tokens one turn spent on one model (a turn that fell back to another model, or
    summarised with a cheaper one, gives one record per model)."""

    scope: str
    model: str
    day: str
    """`YYYY-MM-DD` in the configured timezone when the turn ended: what "per day" means."""
    at: float
    prompt_tokens: int
    completion_tokens: int
    calls: int = 1
    session_id: str | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class UsageTotal:
    """Tokens summed over one (day, model, scope)."""

    day: str
    model: str
    scope: str
    prompt_tokens: int
    completion_tokens: int
    calls: int


class UsageStore(Protocol):
    """Tokens per turn and model, kept so cost can be read per user, model and day (`GET
    /api/usage`, `hermes usage`). Every read names its scope, or none for an admin's view."""

    def record_usage(self, records: Sequence[UsageRecord]) -> None: ...

    def usage_totals(
        self, *, since: float, until: float, scope: str | None = None
    ) -> list[UsageTotal]:
        """Sums per (day, model, scope) of the records made in [since, until); only
        `scope`'s when given."""
        ...

    def session_usage(self, scope: str, session_id: str) -> list[UsageTotal]:
        """Sums per model of one session's records (`day` empty): a chat's `/usage`."""
        ...

    def forget_usage(self, scope: str) -> int:
        """Remove every record of `scope`; returns how many."""
        ...


class CompactionStore(Protocol):
    """The prompt view's records: compactions per session, message ranges hidden from the
    prompt (undo), and learned context windows."""

    def add_compaction(
        self, scope: str, session_id: str, *, head_end: int, upto_idx: int, summary: str, kind: str
    ) -> Compaction:
        """Record a new prompt view of the session (numbered after the previous ones)."""
        ...

    def latest_compaction(self, scope: str, session_id: str) -> Compaction | None: ...

    def compression_markers(self, scope: str, session_id: str) -> list[dict[str, Any]]:
        """Every compaction of the session, oldest first, without the summaries' text:
        `seq, head_end, upto_index, kind, created_at, summary_chars`."""
        ...

    def hide_messages(self, scope: str, session_id: str, *, start: int, end: int) -> None:
        """Leave messages [start, end) out of the session's prompt from now on (`/undo`,
        `/retry`); they stay stored, listed and searchable."""
        ...

    def hidden_ranges(self, scope: str, session_id: str) -> list[tuple[int, int]]:
        """The [start, end) message ranges hidden from the session's prompt, by start."""
        ...

    def get_model_limit(self, model: str) -> int | None:
        """The context window learned for `model` from a context-length error, if any."""
        ...

    def set_model_limit(self, model: str, context_length: int) -> None:
        """Remember a learned window; only ever lowers a known one (never raises it)."""
        ...


@dataclass(frozen=True, slots=True)
class NoteChange:
    """One change to a note (MEMORY.md, USER.md, SOUL.md, `skill:NAME`) as it is recorded:
    the whole text before and after, who made it and why (SPEC §13 memory history)."""

    target: str
    before: str
    after: str
    actor: str
    """tool | review | api | cli | editor (a hand edit found later) | baseline."""
    reason: str | None = None
    session_id: str | None = None
    turn: int | None = None
    """Index of the session's message that made the change (a tool call)."""
    key_name: str | None = None
    reverts: int | None = None
    """The version this change reverted, if it is a revert."""


@dataclass(frozen=True, slots=True)
class NoteVersion(NoteChange):
    id: int = 0
    scope: str = DEFAULT_SCOPE
    at: float = 0.0


class NoteHistoryStore(Protocol):
    """Versions of each scope's notes, skills and SOUL.md, newest kept (older ones fold
    into one baseline version), so every change can be read back, explained and reverted."""

    def add_version(self, scope: str, change: NoteChange, *, keep: int) -> NoteVersion:
        """Record `change`, then fold the target's oldest versions so at most `keep` stay."""
        ...

    def latest_version(self, scope: str, target: str) -> NoteVersion | None: ...

    def get_version(self, scope: str, version_id: int) -> NoteVersion | None:
        """The version `version_id` if it belongs to `scope`, else None."""
        ...

    def list_versions(
        self, scope: str, *, target: str | None = None, limit: int = 50, after_id: int = 0
    ) -> list[NoteVersion]:
        """Newest first; with `after_id`, only versions recorded after that one."""
        ...

    def introducing(
        self, scope: str, text: str, *, target: str | None = None, limit: int = 20
    ) -> list[NoteVersion]:
        """Versions whose text after holds `text` (case-insensitive) and before did not,
        newest first: where an entry came from."""
        ...

    def forget_versions(self, scope: str) -> int:
        """Remove every version of `scope`; returns how many."""
        ...


@dataclass(frozen=True, slots=True)
class SharedRecord:
    """One small JSON record of shared API state (a stored response, a pairing code, a
    delivery key, a sign-out): addressed by (kind, scope, key)."""

    kind: str
    scope: str
    key: str
    body: dict[str, Any]
    created_at: float
    expires_at: float | None = None


class RecordStore(Protocol):
    """Small records every replica must agree on, which used to live in one process's memory
    or in files under `$HERMES_HOME`: stored `/v1/responses`, gateway pairing codes and chat
    sessions, dashboard sign-outs, answers to approvals, delivery keys (send once), and the
    uses that quotas count. A record past its `expires_at` is as good as absent."""

    def put_record(
        self, kind: str, scope: str, key: str, body: dict[str, Any], *, ttl: float | None = None
    ) -> None:
        """Insert or replace the record."""
        ...

    def add_record(
        self, kind: str, scope: str, key: str, body: dict[str, Any], *, ttl: float | None = None
    ) -> bool:
        """Insert the record unless a live one has its key: True for the one caller (of
        every replica) that added it, so "do this once" is `if add_record(...)`."""
        ...

    def get_record(self, kind: str, scope: str, key: str) -> SharedRecord | None: ...

    def take_record(self, kind: str, scope: str, key: str) -> SharedRecord | None:
        """Remove the record and return it: only one caller gets it (one-time codes)."""
        ...

    def list_records(
        self, kind: str, scope: str | None = None, *, limit: int = 1000
    ) -> list[SharedRecord]:
        """Live records of `kind` (in `scope`, or every scope), newest first."""
        ...

    def delete_records(self, kind: str, scope: str, keys: Sequence[str] | None = None) -> int:
        """Delete `keys` (all of the scope's records of `kind` when None); returns how many."""
        ...

    def forget_records(self, scope: str) -> int:
        """Delete every record of `scope`, of every kind (`DELETE /api/users/{id}`)."""
        ...

    def trim_records(self, kind: str, keep: int) -> int:
        """Keep only the newest `keep` records of `kind` (and drop expired ones)."""
        ...

    def use_quota(
        self, counters: Sequence[tuple[str, float, int]], now: float
    ) -> tuple[str, float] | None:
        """Count one use on every (counter, window seconds, limit), all or none: None when
        each had room (the uses are recorded), else (counter, seconds until it has room)."""
        ...


class StoreParts:
    """The sub-objects every backend serves beside its methods (documented on `Store`),
    declared once: a backend inherits these types instead of restating them."""

    url: str
    idempotency: IdempotencyStore | None
    documents: DocumentStore | None
    search: Searcher
    vectors: VectorStore | None
    runs: RunStore | None
    note_history: NoteHistoryStore | None
    usage: UsageStore | None
    records: RecordStore | None


class Store(CompactionStore, Protocol):
    """Sessions, messages, compactions and leases, always addressed within a scope; recall
    (`search`, `vectors`) and the rest are sub-objects with contracts of their own.

    Every method is blocking (call it from a worker thread in async code) and safe to call
    from several threads and processes at once.
    """

    url: str
    """Where the data lives (`sqlite:///…` or `postgresql://…`, password left out)."""

    idempotency: IdempotencyStore | None
    """`Idempotency-Key`s shared across replicas (PostgreSQL); None: each process keeps its
    own (SQLite: one machine)."""

    documents: DocumentStore | None
    """Notes, cron jobs and run outputs when they live in the database (PostgreSQL: shared
    by every replica); None when they are files under `$HERMES_HOME` (SQLite)."""

    search: Searcher
    """Full-text search over the scope's messages (`hermes.store.search_contract.Searcher`)."""

    vectors: VectorStore | None
    """Message embeddings for semantic search; None where the backend keeps none."""

    runs: RunStore | None
    """`/v1/runs` runs and their events (both backends keep them)."""

    note_history: NoteHistoryStore | None
    """Versions of notes, skills and SOUL.md (both backends keep them)."""

    usage: UsageStore | None
    """Tokens per turn and model, for cost reports (both backends keep them)."""

    records: RecordStore | None
    """Shared API state: responses, pairing, sign-outs, approvals, delivery keys, quota
    uses (both backends keep them: state.db alone, PostgreSQL for every replica)."""

    def ensure_session(
        self,
        scope: str,
        session_id: str,
        *,
        source: str,
        title: str | None = None,
        parent_session_id: str | None = None,
        started_at: float | None = None,
    ) -> SessionRecord: ...

    def begin_turn(
        self, scope: str, session_id: str, *, source: str, lease: Lease, ttl_seconds: float
    ) -> SessionRecord | None:
        """Take `lease` and ensure the session in one transaction; None while someone else's
        lease is live (the caller polls). The lease is taken when free, expired, already ours,
        or held by a process that `hermes.store.leases.holder_is_dead` says is gone. Saves a
        turn a round trip and a write; the record carries its `hidden` ranges, read in the same
        transaction, which saves the turn's history load another."""
        ...

    def get_session(self, scope: str, session_id: str) -> SessionRecord | None: ...

    def list_sessions(
        self, scope: str, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]: ...

    def sessions_titled(self, scope: str, words: Sequence[str], limit: int) -> list[SessionRecord]:
        """Up to `limit` sessions whose title holds every one of `words` (case-insensitive,
        as substrings), most recently active first: one query, however many sessions."""
        ...

    def set_system_prompt(self, scope: str, session_id: str, prompt: str) -> None: ...

    def set_session_title(self, scope: str, session_id: str, title: str | None) -> bool:
        """Rename a session (None: no title); False when the scope has no such session."""
        ...

    def delete_session(self, scope: str, session_id: str) -> bool: ...

    def delete_scope(self, scope: str) -> int:
        """Remove every session of a scope and with them its messages, search rows, vectors,
        compactions and hidden ranges, plus the scope's other rows (its vector removal count,
        its idempotency keys); returns sessions removed. Nothing of the scope is left."""
        ...

    def list_scopes(self) -> list[str]:
        """Every scope that has sessions (for `hermes db copy`)."""
        ...

    def scope_stats(self) -> list[ScopeStats]:
        """Sessions, messages and last activity of every scope that has sessions, by scope."""
        ...

    def append_messages(
        self,
        scope: str,
        session_id: str,
        messages: list[NewMessage],
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        last_prompt_tokens: int | None = None,
        system_prompt: str | None = None,
        release: Lease | None = None,
    ) -> list[MessageRecord]:
        """Append all or none; in the same transaction set the session's system prompt if it
        has none yet and give up `release`, so a turn ends in one write."""
        ...

    def import_sessions(self, scope: str, sessions: Sequence[NewSession]) -> list[str]:
        """Store whole sessions in one transaction, skipping ids the scope already has;
        returns the ids imported. Made for bulk loads (tens of thousands of messages/s)."""
        ...

    def get_messages(
        self, scope: str, session_id: str, *, start: int = 0, end: int | None = None
    ) -> list[MessageRecord]: ...

    def count_messages(self, scope: str | None = None) -> int: ...

    def acquire_lock(self, name: str, holder: str, ttl_seconds: float) -> bool:
        """Take a named lease if free, expired, already ours, or held by a process that
        `hermes.store.leases.holder_is_dead` says is gone; never blocks (the gateway's poller
        lease)."""
        ...

    def release_lock(self, name: str, holder: str) -> None: ...

    def renew_lock(self, name: str, holder: str, ttl_seconds: float) -> bool:
        """Extend a lease `holder` still holds (heartbeat); False when it is no longer theirs."""
        ...

    def health(self, *, deep: bool = True) -> dict[str, Any]:
        """`ok` plus what an operator needs to see (schema version, backend details).
        `deep` (an operator's `hermes doctor`): every check now, however long it takes;
        else (a probe of `/health`, every few seconds): only what stays cheap at any size."""
        ...

    def schema_status(self) -> SchemaStatus: ...

    def migrate(self) -> list[int]:
        """Apply pending migrations (once, whoever else is migrating); versions applied."""
        ...

    def close(self) -> None: ...
