"""Search hygiene: the FTS integrity check in `hermes doctor`, `hermes sessions reindex`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from hermes.cli.main import app
from hermes.store.base import NewMessage
from hermes.store.sqlite import SQLiteStore

runner = CliRunner()


def _damage(home: Path) -> None:
    store = SQLiteStore(home / "state.db")
    store.ensure_session("default", "s", source="cli")
    store.append_messages("default", "s", [NewMessage("user", "the blue kettle whistles")])
    store.connection.execute(
        "INSERT INTO message_windows_fts (rowid, before, body, after, tag) "
        "VALUES (999, '', 'ghost', '', 'x')"
    )
    store.close()


def test_doctor_reports_a_damaged_index_and_reindex_repairs_it(home: Path) -> None:
    _damage(home)
    result = runner.invoke(app, ["doctor"])
    line = next(x for x in result.output.splitlines() if "search index" in x)
    assert result.exit_code == 1 and "hermes sessions reindex" in line
    check = runner.invoke(app, ["sessions", "reindex", "--check"])
    assert check.exit_code == 1 and "does not match" in check.output
    fixed = runner.invoke(app, ["sessions", "reindex"])
    assert fixed.exit_code == 0, fixed.output
    assert "1 messages indexed; it was damaged" in fixed.output
    check = runner.invoke(app, ["sessions", "reindex", "--check"])
    assert check.exit_code == 0 and "search index ok (1 messages indexed)" in check.output
    result = runner.invoke(app, ["doctor"])
    assert any("ok" in x and "search index" in x for x in result.output.splitlines())
    found = runner.invoke(app, ["sessions", "search", "kettle", "--json"])
    assert '"message_index": 0' in found.output
