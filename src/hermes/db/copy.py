"""`hermes db copy`: move a home's sessions, notes and cron jobs between two databases
(SQLite ↔ PostgreSQL), idempotently: what the target already has is kept and skipped, so an
interrupted copy is finished by running it again. Counts are verified at the end.

Sessions go through the store's bulk `import_sessions` (whole sessions, one transaction per
batch) with their compaction records; notes and jobs through the same `open_notes` /
`JobStore` the rest of Hermes uses, so files (SQLite mode) and documents (PostgreSQL mode)
are both read and written the usual way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hermes.config.settings import Settings
from hermes.cron.schedule import resolve_timezone
from hermes.cron.store import JobStore
from hermes.memory.notes import FILES, open_notes
from hermes.store.api_keys import ApiKeyStore
from hermes.store.base import DEFAULT_SCOPE, NewSession, SessionRecord, Store

BATCH_SESSIONS = 200
PAGE = 1000


@dataclass
class ScopeCount:
    sessions: int = 0
    messages: int = 0


@dataclass
class CopyReport:
    copied_sessions: int = 0
    skipped_sessions: int = 0
    notes_added: int = 0
    jobs_added: int = 0
    keys_added: int = 0
    records_added: int = 0
    source: dict[str, ScopeCount] = field(default_factory=dict)
    target: dict[str, ScopeCount] = field(default_factory=dict)

    def mismatches(self) -> list[str]:
        """Scopes whose target holds fewer sessions or messages than the source."""
        out = []
        for scope, src in self.source.items():
            dst = self.target.get(scope, ScopeCount())
            if dst.sessions < src.sessions or dst.messages < src.messages:
                out.append(
                    f"{scope}: source {src.sessions} sessions / {src.messages} messages, "
                    f"target {dst.sessions} / {dst.messages}"
                )
        return out


def all_sessions(store: Store, scope: str) -> list[SessionRecord]:
    found: list[SessionRecord] = []
    while page := store.list_sessions(scope, limit=PAGE, offset=len(found)):
        found.extend(page)
    return found


def count(store: Store, scope: str) -> ScopeCount:
    sessions = all_sessions(store, scope)
    return ScopeCount(len(sessions), sum(s.message_count for s in sessions))


def _as_new(store: Store, session: SessionRecord) -> NewSession:
    return NewSession(
        id=session.id,
        source=session.source,
        messages=[m.as_new() for m in store.get_messages(session.scope, session.id)],
        title=session.title,
        started_at=session.started_at,
    )


def copy_sessions(
    src: Store, dst: Store, scope: str, report: CopyReport, advance: Callable[[int], None]
) -> None:
    """Every session of `scope` the target lacks, in batches, with its compactions."""
    pending = [s for s in all_sessions(src, scope) if dst.get_session(scope, s.id) is None]
    report.skipped_sessions += report.source[scope].sessions - len(pending)
    advance(report.source[scope].sessions - len(pending))
    for start in range(0, len(pending), BATCH_SESSIONS):
        batch = pending[start : start + BATCH_SESSIONS]
        done = set(dst.import_sessions(scope, [_as_new(src, s) for s in batch]))
        for session in batch:
            if session.id not in done:
                continue
            if session.system_prompt:
                dst.set_system_prompt(scope, session.id, session.system_prompt)
            for mark in src.compression_markers(scope, session.id):
                latest = src.latest_compaction(scope, session.id)
                if latest is not None and latest.seq == mark["seq"]:
                    dst.add_compaction(
                        scope,
                        session.id,
                        head_end=latest.head_end,
                        upto_idx=latest.upto_idx,
                        summary=latest.summary,
                        kind=latest.kind,
                    )
        report.copied_sessions += len(done)
        advance(len(batch))


def copy_notes(settings: Settings, src: Store, dst: Store, scope: str) -> int:
    """Entries of MEMORY.md / USER.md the target lacks, appended in order; returns added."""
    source = open_notes(settings, scope, src)
    target = open_notes(settings, scope, dst)
    if source.where == target.where:
        return 0  # the same files on both sides
    added = 0
    for name in FILES:
        entries = source.read(name).entries
        with target.locked(name) as state:
            missing = [e for e in entries if e not in state.entries]
            if missing:
                target.save(state, [*state.entries, *missing])
                added += len(missing)
    return added


def copy_jobs(settings: Settings, src: Store, dst: Store, scope: str) -> int:
    """Jobs (by id) the target lacks; returns how many were added."""
    tz = resolve_timezone(settings.timezone)
    source = JobStore(settings.home, scope, tz, documents=src.documents)
    target = JobStore(settings.home, scope, tz, documents=dst.documents)
    if src.documents is None and dst.documents is None:
        return 0  # both sides use the same jobs.json
    jobs = source.load()
    added = 0
    with target.edit() as have:
        known = {j.get("id") for j in have}
        for job in jobs:
            if job.get("id") not in known:
                job.pop("run_claim", None)
                have.append(job)
                added += 1
    return added


def copy_keys(src: Store, dst: Store) -> int:
    """Scoped API keys (by id, with their secrets' hashes, so they keep working) the target
    lacks, and revocations it missed; returns how many keys were added."""
    if not isinstance(src, ApiKeyStore) or not isinstance(dst, ApiKeyStore):
        return 0
    have = {r.id: r for r in dst.list_api_keys()}
    added = 0
    for record, secret_hash in src.export_api_keys():
        mine = have.get(record.id)
        if mine is None:
            dst.add_api_key(record, secret_hash)
            added += 1
        elif record.revoked_at is not None and mine.revoked_at is None:
            dst.revoke_api_key(record.id)
    return added


DURABLE_RECORDS = ("response", "approval_always", "approval_session")
"""Shared records worth moving with the data (stored responses, remembered approvals); the
rest are short-lived (sign-outs, delivery keys, quota uses) and start afresh."""


def copy_records(src: Store, dst: Store) -> int:
    """Durable shared records the target lacks (kept with what is left of their time)."""
    if src.records is None or dst.records is None:
        return 0
    now = time.time()
    added = 0
    for kind in DURABLE_RECORDS:
        for r in src.records.list_records(kind, limit=1_000_000):
            ttl = None if r.expires_at is None else r.expires_at - now
            if ttl is not None and ttl <= 0:
                continue
            added += dst.records.add_record(kind, r.scope, r.key, r.body, ttl=ttl)
    return added


def scopes_of(settings: Settings, src: Store) -> list[str]:
    """The scopes to move: those with sessions, with jobs, and the default (its notes)."""
    scopes = {DEFAULT_SCOPE, *src.list_scopes()}
    if src.documents is not None:
        from hermes.cron.store import JOBS_DOCUMENT

        scopes.update(src.documents.document_scopes(JOBS_DOCUMENT))
        scopes.update(src.documents.document_scopes("memories/MEMORY.md"))
        scopes.update(src.documents.document_scopes("memories/USER.md"))
    return sorted(scopes)
