"""Seed one end user's data in every holder, and look for it everywhere afterwards (the
management API's tests and `hermes users` tests share these)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC
from pathlib import Path
from typing import Any

import psycopg

from hermes.auth.keys import create_key
from hermes.config.settings import Settings
from hermes.cron.jobs import create_job
from hermes.cron.store import JOBS_DOCUMENT, JobStore, output_dir
from hermes.gateway.access import PairingStore
from hermes.memory.notes import open_notes
from hermes.memory.tool import Operation, change_notes
from hermes.scopes import scope_for_user, scope_root
from hermes.store.base import NewMessage, Store
from hermes.store.response_store import ResponseStore, StoredResponse
from hermes.store.urls import sqlite_path


async def seed_user(settings: Settings, store: Store, user: str, word: str) -> dict[str, Any]:
    """Everything a user can leave behind, each mentioning `word`; returns the key made."""
    scope = scope_for_user(user)
    store.ensure_session(scope, "s1", source="api", title=f"About {word}")
    records = store.append_messages(
        scope,
        "s1",
        [
            NewMessage("user", f"I adore the {word} festival"),
            NewMessage("assistant", f"The {word} festival sounds lovely"),
        ],
    )
    store.ensure_session(scope, "s2", source="cron")
    store.append_messages(scope, "s2", [NewMessage("user", "second session here")])
    if store.vectors is not None:
        store.vectors.put("test-model", [(r.id, scope, b"\x01\x02" * 4) for r in records])
    store.add_compaction(scope, "s1", head_end=0, upto_idx=1, summary=f"{word} summary", kind="t")
    store.hide_messages(scope, "s1", start=1, end=2)
    notes = open_notes(settings, scope, store)
    change_notes(notes, "user", [Operation("add", f"Loves the {word} festival")])
    change_notes(notes, "memory", [Operation("add", f"Asked about {word}")])
    jobs = JobStore(settings.home, scope, UTC, documents=store.documents)
    job = create_job(jobs, name=f"{word} job", schedule="every 1h", prompt=f"about {word}")
    out = output_dir(settings.home, scope, job["id"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "2026-01-01_00-00-00.md").write_text(f"# {word} run\n", encoding="utf-8")
    await ResponseStore(store).save(scope, StoredResponse(f"resp_{user}", "s1", {"output": word}))
    pairing = PairingStore(settings.home, documents=store.documents)
    offer = pairing.offer(user, word)
    assert offer is not None
    pairing.approve(offer.code)
    token, _ = create_key(store, user)
    return {"key": token, "scope": scope}


def leftovers(settings: Settings, store: Store, user: str, word: str) -> list[str]:
    """Where anything of `user` (their id or `word`) is still found: database rows, search
    index, files under HERMES_HOME. Empty when they are forgotten."""
    scope = scope_for_user(user)
    found: list[str] = []
    if store.url.startswith("sqlite"):
        database = sqlite_path(store.url, settings.home)
        found += _sqlite_rows(database, (scope, user, word))
        found += _fts_hits(database, word)
    else:
        found += _pg_rows(store.url, (scope, user, word))
    responses = settings.home / "responses.db"
    if responses.exists():
        found += _sqlite_rows(responses, (scope, word))
    for path in settings.home.rglob("*"):
        if not path.is_file() or path.name.startswith(("state.db", "responses.db")):
            continue
        data = path.read_bytes()
        if word.encode() in data or user.encode() in data:
            found.append(f"file {path.relative_to(settings.home)}")
    if scope_root(settings.home, scope).exists():
        found.append("the user's directory")
    if store.documents is not None and store.documents.read_document(scope, JOBS_DOCUMENT):
        found.append("jobs document")
    return found


def _sqlite_rows(path: Path, needles: tuple[str, ...]) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        found = []
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                text = json.dumps([str(v) for v in row])
                if any(n in text for n in needles):
                    found.append(f"{path.name}:{table}")
                    break
        return found
    finally:
        conn.close()


def _fts_hits(path: Path, word: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%fts5%'"
            )
        ]
        return [
            f"fts {t}"
            for t in tables
            if conn.execute(
                f'SELECT count(*) FROM "{t}" WHERE "{t}" MATCH ?', (f'"{word}"',)
            ).fetchone()[0]
        ]
    finally:
        conn.close()


def _pg_rows(url: str, needles: tuple[str, ...]) -> list[str]:
    found = []
    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        for table in tables:
            for needle in needles:
                row = conn.execute(
                    f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE %s',
                    (f"%{needle}%",),
                ).fetchone()
                if row and row[0]:
                    found.append(f"{table} ({needle})")
    return found
