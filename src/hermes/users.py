"""End users as a whole: who they are (`list_users`) and forgetting one everywhere
(`forget_user`), shared by `DELETE /api/users/{id}` and `hermes users forget`.

Forgetting is a list of steps, one per holder of a user's data, each returning what it
removed. A part that keeps something of a user (memory history, an external memory
provider) adds its own step with `@forget_step("name")` in a module imported below, so one
call still forgets everything. Steps run in order: the user's keys go first (nothing new is
written with them meanwhile), their files last. Every step is idempotent: a second call
finds nothing and reports zeros.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.config.settings import Settings
from hermes.scopes import USER_SCOPE_PREFIX, scope_folders, scope_for_user, user_of_scope
from hermes.store.api_keys import ApiKeyStore
from hermes.store.base import DEFAULT_SCOPE, Store


@dataclass(frozen=True)
class Forgetting:
    """What a forget step needs: where things live and whose they are."""

    settings: Settings
    store: Store
    user: str
    scope: str

    @property
    def home(self) -> Path:
        return self.settings.home


ForgetStep = Callable[[Forgetting], dict[str, int]]
FORGET_STEPS: list[tuple[str, ForgetStep]] = []


def forget_step(name: str) -> Callable[[ForgetStep], ForgetStep]:
    """Register a holder's step (run in registration order); it returns counts by name."""

    def add(step: ForgetStep) -> ForgetStep:
        FORGET_STEPS.append((name, step))
        return step

    return add


def forget_user(settings: Settings, store: Store, user: str) -> dict[str, int]:
    """Remove everything Hermes holds of end user `user`; counts of what went, by holder.

    `user` is an end-user id (`X-Hermes-User-Id`); the owner's default scope cannot be
    named, so it is never touched. Raises `InvalidIdError` for an id that breaks the rules.
    """
    scope = scope_for_user(user)
    job = Forgetting(settings, store, user, scope)
    counts: dict[str, int] = {}
    for _, step in FORGET_STEPS:
        for key, value in step(job).items():
            counts[key] = counts.get(key, 0) + value
    return counts


@forget_step("api_keys")
def _api_keys(job: Forgetting) -> dict[str, int]:
    store = job.store
    removed = store.delete_api_keys_of(job.user) if isinstance(store, ApiKeyStore) else 0
    return {"api_keys": removed}


@forget_step("sessions")
def _sessions(job: Forgetting) -> dict[str, int]:
    """Sessions, and with them messages, search rows, vectors and compactions."""
    messages = job.store.count_messages(job.scope)
    return {"sessions": job.store.delete_scope(job.scope), "messages": messages}


@forget_step("runs")
def _runs(job: Forgetting) -> dict[str, int]:
    """`/v1/runs` records and their events (outputs included)."""
    runs = job.store.runs
    return {"runs": runs.delete_runs(job.scope) if runs is not None else 0}


@forget_step("notes")
def _notes(job: Forgetting) -> dict[str, int]:
    from hermes.memory.notes import FILES, open_notes

    notes = open_notes(job.settings, job.scope, job.store)
    entries = sum(len(notes.read(target).entries) for target in FILES)
    notes.erase()
    return {"notes": entries}


@forget_step("note_history")
def _note_history(job: Forgetting) -> dict[str, int]:
    """Every earlier version of the notes (memory history)."""
    history = job.store.note_history
    return {"note_versions": history.forget_versions(job.scope) if history is not None else 0}


@forget_step("jobs")
def _jobs(job: Forgetting) -> dict[str, int]:
    """Cron jobs and their run outputs."""
    from hermes.cron.store import JOBS_DOCUMENT, cron_dir, jobs_path, parse_jobs_file

    documents = job.store.documents
    path = jobs_path(job.home, job.scope)
    if documents is not None:
        raw = (documents.read_document(job.scope, JOBS_DOCUMENT) or "").encode("utf-8")
    else:
        raw = path.read_bytes() if path.is_file() else b""
    jobs = 0
    with contextlib.suppress(Exception):  # unreadable: still removed, counted as none
        jobs = len(parse_jobs_file(path, raw)[0]) if raw.strip() else 0
    folder = cron_dir(job.home, job.scope)
    outputs = sum(1 for p in (folder / "output").rglob("*.md") if p.is_file())
    if documents is not None:
        outputs += len(
            [n for n in documents.list_documents(job.scope, "cron/") if n != JOBS_DOCUMENT]
        )
        documents.delete_documents(job.scope, documents.list_documents(job.scope, "cron/"))
    _remove_tree(job.home, folder)
    return {"jobs": jobs, "job_outputs": outputs}


@forget_step("documents")
def _documents(job: Forgetting) -> dict[str, int]:
    """Whatever else the scope keeps as database documents (PostgreSQL)."""
    documents = job.store.documents
    if documents is None:
        return {}
    names = documents.list_documents(job.scope, "")
    return {"documents": documents.delete_documents(job.scope, names)}


@forget_step("responses")
def _responses(job: Forgetting) -> dict[str, int]:
    """Stored `/v1/responses` objects."""
    from hermes.store.response_store import ResponseStore

    responses = ResponseStore(job.store).forget_scope(job.scope)
    records = job.store.records
    others = records.forget_records(job.scope) if records is not None else 0
    return {"responses": responses, "shared_records": others}


@forget_step("pairing")
def _pairing(job: Forgetting) -> dict[str, int]:
    """The gateway's approval of the identity and its chats' session pointers."""
    from hermes.gateway.access import PairingStore
    from hermes.gateway.state import forget_chats

    return {
        "pairing": PairingStore(job.home, documents=job.store.documents).forget(job.user),
        "chats": forget_chats(job.home, job.scope, job.store.documents),
    }


@forget_step("files")
def _files(job: Forgetting) -> dict[str, int]:
    """Anything left in the user's own directory (users/<dir>/)."""
    count = 0
    for root in scope_folders(job.home, job.scope):
        count += sum(1 for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0
        _remove_tree(job.home, root)
    return {"files": count}


def _remove_tree(home: Path, folder: Path) -> None:
    """Remove a folder of a user's, only ever below `$HERMES_HOME/users/`."""
    users = (home / "users").resolve()
    target = folder.resolve()
    if target == users or users not in target.parents or not folder.is_dir():
        return
    shutil.rmtree(target)


# ------------------------------------------------------------------------------ listing


@dataclass
class UserSummary:
    """One end user as `GET /api/users` shows them."""

    id: str
    sessions: int = 0
    messages: int = 0
    last_active: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sessions": self.sessions,
            "messages": self.messages,
            "last_active": self.last_active,
        }


def list_users(settings: Settings, store: Store) -> list[UserSummary]:
    """Every end user Hermes holds something of: sessions, scoped keys, cron jobs, notes
    kept in the database. (Notes files alone name no user: a folder may be a hash of the id.)"""
    found: dict[str, UserSummary] = {}

    def user(scope: str) -> UserSummary | None:
        name = user_of_scope(scope)
        if name is None:
            return None
        return found.setdefault(name, UserSummary(name))

    for stats in store.scope_stats():
        summary = user(stats.scope)
        if summary is not None:
            summary.sessions, summary.messages = stats.sessions, stats.messages
            summary.last_active = stats.last_active
    if isinstance(store, ApiKeyStore):
        for record in store.list_api_keys():
            user(USER_SCOPE_PREFIX + record.user)
    for scope in _job_and_note_scopes(settings, store):
        user(scope)
    return sorted(found.values(), key=lambda s: s.id)


def _job_and_note_scopes(settings: Settings, store: Store) -> set[str]:
    from hermes.cron.store import JOBS_DOCUMENT, all_job_files, parse_jobs_file, scope_of_file

    scopes: set[str] = set()
    documents = store.documents
    if documents is not None:
        for name in (JOBS_DOCUMENT, "memories/MEMORY.md", "memories/USER.md"):
            scopes.update(documents.document_scopes(name))
        return scopes - {DEFAULT_SCOPE}
    for path in all_job_files(settings.home)[1:]:
        with contextlib.suppress(Exception):  # a missing or broken file names nobody
            _, extra = parse_jobs_file(path, path.read_bytes())
            scope = scope_of_file(settings.home, path, extra)
            if scope is not None:
                scopes.add(scope)
    return scopes - {DEFAULT_SCOPE}


@forget_step("provider_memory")
def _provider_memory(job: Forgetting) -> dict[str, int]:
    """What the external memory provider (memory.provider) keeps of the user, at the provider."""
    from hermes.memory.providers.forget import forget_provider_memory

    return {"provider_memory": forget_provider_memory(job.settings, job.scope)}
