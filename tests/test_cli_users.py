"""`hermes users list|export|forget` (the same functions as `/api/users`), on both backends."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from hermes.config.settings import Settings
from hermes.runtime import open_store

from .conftest import run_cli
from .server.user_data import leftovers, seed_user

pytestmark = pytest.mark.usefixtures("on_each_backend")


async def _seed(settings: Settings) -> None:
    store = open_store(settings)
    try:
        await seed_user(settings, store, "alice", "quokkaberry")
        await seed_user(settings, store, "bob", "wombatplum")
    finally:
        store.close()


async def test_list_export_forget(settings: Settings, tmp_path: Path) -> None:
    await _seed(settings)
    r = run_cli("users", "list", "--json")
    assert r.returncode == 0, r.stderr
    assert [u["id"] for u in json.loads(r.stdout)] == ["alice", "bob"]

    target = tmp_path / "alice.zip"
    r = run_cli("users", "export", "alice", "-o", str(target))
    assert r.returncode == 0, r.stderr
    assert "sessions.jsonl" in zipfile.ZipFile(target).namelist()

    r = run_cli("users", "forget", "alice", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout)
    assert counts["forgotten"] == "alice" and counts["sessions"] == 2
    store = open_store(settings)
    try:
        assert leftovers(settings, store, "alice", "quokkaberry") == []
        assert leftovers(settings, store, "bob", "wombatplum") != []
    finally:
        store.close()
    r = run_cli("users", "forget", "alice", "--yes")
    assert r.returncode == 0 and "nothing was held" in r.stdout
    r = run_cli("users", "list")
    assert "alice" not in r.stdout and "bob" in r.stdout


def test_forget_asks_first_and_refuses_bad_ids(settings: Settings) -> None:
    r = run_cli("users", "forget", "alice", input="n\n")
    assert r.returncode == 1 and "nothing was removed" in r.stderr
    r = run_cli("users", "forget", "bad user", "--yes")
    assert r.returncode == 2 and "user id" in r.stderr
