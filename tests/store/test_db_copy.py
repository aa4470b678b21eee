"""`hermes db copy`: a home's sessions, notes and jobs from SQLite to PostgreSQL and back,
idempotent, with verified counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermes.auth.keys import create_key, revoke, verify
from hermes.cli.main import app
from hermes.config.settings import load_settings
from hermes.cron.jobs import create_job
from hermes.cron.schedule import resolve_timezone
from hermes.cron.store import JobStore
from hermes.memory.notes import open_notes
from hermes.store import NewMessage, NewSession, open_store


def _sqlite(path: Path) -> str:
    return "sqlite:///" + str(path).lstrip("/")


def test_copy_a_home_to_postgresql_and_back(
    pg_url: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings()
    source = _sqlite(home / "state.db")
    store = open_store(source)
    try:
        for scope in ("default", "user:ann"):
            store.import_sessions(
                scope,
                [
                    NewSession(
                        f"chat-{n}",
                        "api",
                        [
                            NewMessage("user", f"the kettle is blue {n}"),
                            NewMessage("assistant", "ok"),
                        ],
                    )
                    for n in range(3)
                ],
            )
        store.add_compaction("default", "chat-0", head_end=0, upto_idx=1, summary="s", kind="k")
        notes = open_notes(settings, "default", store)
        with notes.locked("user") as state:
            notes.save(state, ["Likes green tea", "Lives in Oslo"])
        tz = resolve_timezone(settings.timezone)
        create_job(JobStore(home, "default", tz), schedule="every 1h", prompt="news", name="news")
        token, key = create_key(store, "ann")
        assert store.records is not None
        store.records.put_record("response", "user:ann", "resp_1", {"session_id": "chat-1"})
    finally:
        store.close()

    runner = CliRunner()
    result = runner.invoke(app, ["db", "copy", "--from", source, "--to", pg_url])
    assert result.exit_code == 0, result.output
    assert (
        "copied 6 session(s) (0 already there), 2 note entr(ies), 1 job(s), 1 scoped key(s), "
        "1 stored response(s) and approval(s)" in result.output
    )
    pg = open_store(pg_url)
    try:
        found = verify(pg, token)  # the same secret works against the new database
        assert found is not None and found.user == "ann"
        assert pg.records is not None and pg.records.get_record("response", "user:ann", "resp_1")
    finally:
        pg.close()
    store = open_store(source)
    try:
        assert revoke(store, key.id)
    finally:
        store.close()
    again = runner.invoke(app, ["db", "copy", "--from", source, "--to", pg_url])
    assert (
        "copied 0 session(s) (6 already there), 0 note entr(ies), 0 job(s), 0 scoped key(s)"
        in again.output
    )

    pg = open_store(pg_url)
    try:
        assert verify(pg, token) is None  # the revocation was carried over too
        assert pg.count_messages("user:ann") == 6
        assert pg.search.match_messages("default", ["kettle"], view="message")
        assert pg.latest_compaction("default", "chat-0") is not None
        assert open_notes(settings, "default", pg).read("user").entries == [
            "Likes green tea",
            "Lives in Oslo",
        ]
        [job] = JobStore(home, "default", tz, documents=pg.documents).load()
        assert job["name"] == "news"
    finally:
        pg.close()

    back = _sqlite(tmp_path / "elsewhere" / "state.db")
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "other-home"))
    result = runner.invoke(app, ["db", "copy", "--from", pg_url, "--to", back])
    assert result.exit_code == 0, result.output
    assert "copied 6 session(s)" in result.output and "2 note entr(ies), 1 job(s)" in result.output
    other = load_settings()
    copied = open_store(back)
    try:
        assert copied.count_messages() == 12
        assert open_notes(other, "default", copied).read("user").entries[0] == "Likes green tea"
    finally:
        copied.close()
    jobs = json.loads((other.home / "cron" / "jobs.json").read_text())["jobs"]
    assert [j["name"] for j in jobs] == ["news"]


def test_copy_refuses_the_same_database(home: Path) -> None:
    url = _sqlite(home / "state.db")
    result = CliRunner().invoke(app, ["db", "copy", "--from", url, "--to", url])
    assert result.exit_code == 2 and "same database" in result.output
