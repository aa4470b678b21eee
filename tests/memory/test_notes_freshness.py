"""Notes over months: write dates, archived (not lost) entries, early capacity warnings,
background save failures told to the user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes.config.settings import MemorySettings, Settings
from hermes.memory.notes import NotesStore, today_utc
from hermes.memory.snapshot import render_scope
from hermes.memory.tool import memory_tool
from hermes.recall.search import session_search
from hermes.services import Services
from hermes.store.base import Store
from hermes.store.sqlite import SQLiteStore
from hermes.tools.registry import ToolContext, Toolset

TOOLS = Toolset([memory_tool, session_search])


@pytest.fixture
def cfg(home: Path) -> Settings:
    return Settings(home=home, memory=MemorySettings(memory_char_limit=200))


async def call(cfg: Settings, tool: str = "memory", **args: object) -> tuple[bool, dict]:
    store = SQLiteStore(cfg.home / "state.db")
    services = Services(cfg)
    services.provide(store, Store)  # type: ignore[type-abstract]
    try:
        ctx = ToolContext(scope="default", session_id="live", services=services)
        outcome = await TOOLS.call(tool, json.dumps(args), ctx)
    finally:
        store.close()
    return outcome.ok, json.loads(outcome.text) if outcome.ok else {"error": outcome.text}


async def test_entries_carry_their_write_date_beside_the_plain_file(cfg: Settings) -> None:
    path = cfg.home / "memories" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text("Written by hand\n")
    ok, _ = await call(cfg, target="memory", action="add", content="Uses Go 1.22")
    assert ok
    assert path.read_text() == "Written by hand\n§\nUses Go 1.22\n"  # still plain text
    block = render_scope(cfg.home, "default", cfg)
    assert block is not None
    assert f"(written {today_utc()}) Uses Go 1.22" in block
    assert "\nWritten by hand" in block and "written" not in block.split("Written by hand")[0][-12:]


async def test_entries_that_leave_are_archived_and_searchable(cfg: Settings) -> None:
    await call(cfg, target="memory", action="add", content="User lives in Porto")
    ok, result = await call(
        cfg, target="memory", action="replace", old_text="Porto", content="User lives in Lisbon"
    )
    assert ok and result["entry_count"] == 1
    archive = (cfg.home / "memories" / "ARCHIVE.md").read_text()
    assert "from MEMORY.md (replaced)" in archive and "User lives in Porto" in archive
    await call(cfg, target="memory", action="remove", old_text="Lisbon")
    archive = (cfg.home / "memories" / "ARCHIVE.md").read_text()
    assert "(removed)" in archive and "User lives in Lisbon" in archive
    ok, found = await call(cfg, "session_search", query="where did the user live, Porto?")
    assert ok and found["results"] == []
    assert [e.splitlines()[1] for e in found["archived_notes"]][0] == "User lives in Porto"
    assert "No match" not in found["hint"]


async def test_usage_warns_before_the_cap(cfg: Settings) -> None:
    ok, result = await call(cfg, target="memory", action="add", content="x" * 120)
    assert ok and "warning" not in result
    ok, result = await call(cfg, target="memory", action="add", content="y" * 50)
    assert ok and "86% full" in result["warning"] and "Consolidate" in result["warning"]
    ok, result = await call(cfg, target="memory", action="add", content="z" * 60)
    assert not ok and "over its limit" in result["error"]  # the cap itself still holds


def test_a_failed_background_save_is_told_once(cfg: Settings) -> None:
    notes = NotesStore(cfg.home, "default", cfg.memory)
    notes.record_failure("MEMORY.md would be 120% — over its limit, so nothing was saved.")
    block = render_scope(cfg.home, "default", cfg)
    assert block is not None and "tell the user" in block and "120%" in block
    assert render_scope(cfg.home, "default", cfg) is None  # told once


async def test_a_newer_labelled_fact_supersedes_the_older_one(cfg: Settings) -> None:
    assert (await call(cfg, target="user", action="add", content="Employer: Acme (designer)"))[0]
    assert (await call(cfg, target="user", action="add", content="Likes: green tea"))[0]
    ok, result = await call(
        cfg, target="user", action="add", content="employer:  Globex, since May"
    )
    assert ok and result["entry_count"] == 2
    assert "older entry with the same label was replaced" in result["message"]
    assert "Employer: Acme" in result["message"]
    text = (cfg.home / "memories" / "USER.md").read_text()
    assert "Globex" in text and "Acme" not in text and "green tea" in text
    archive = (cfg.home / "memories" / "ARCHIVE.md").read_text()
    assert "(superseded)" in archive and "Employer: Acme (designer)" in archive
    # unlabelled entries (links included) never supersede one another
    for content in (
        "User likes jazz",
        "User likes tea",
        "https://example.org/a is the wiki",
        "https://example.org/b is the tracker",
    ):
        assert (await call(cfg, target="memory", action="add", content=content))[0]
    memory = (cfg.home / "memories" / "MEMORY.md").read_text()
    assert memory.count("\n§\n") == 3
