"""Session dates as data: an imported session titled with its date happened then, and
`session_search` says when each hit was said, so a "when" question needs no second call."""

from __future__ import annotations

import json
from pathlib import Path

from hermes.config.settings import Settings
from hermes.recall.search import session_search
from hermes.services import Services
from hermes.store.base import Store
from hermes.store.session_dates import title_time
from hermes.store.sqlite import SQLiteStore
from hermes.tools.registry import ToolContext, Toolset
from tests.conftest import run_cli


def test_only_a_whole_date_in_a_title_counts() -> None:
    assert title_time("1:56 pm on 8 May, 2023") == 1683554160.0  # 2023-05-08 13:56 UTC
    assert title_time("2023-05-08") == 1683504000.0
    for not_a_date in ("Trip planning", "Budget 2023", "May 2023", "Meeting on 8 May, 2023"):
        assert title_time(not_a_date) is None, not_a_date
    assert title_time(None) is None and title_time("12") is None


def _import(tmp_path: Path, sessions: list[dict]) -> None:
    source = tmp_path / "talk.jsonl"
    source.write_text("".join(json.dumps(s) + "\n" for s in sessions))
    r = run_cli("sessions", "import", str(source))
    assert r.returncode == 0, r.stderr


async def test_a_hit_carries_the_date_its_session_took_place(home: Path, tmp_path: Path) -> None:
    _import(
        tmp_path,
        [
            {
                "id": "session_1",
                "title": "1:56 pm on 8 May, 2023",
                "messages": [
                    {"role": "user", "content": "Caroline: I went to a support group yesterday."},
                    {"role": "assistant", "content": "Melanie: That sounds brave!"},
                ],
            },
            {
                "id": "session_2",
                "title": "Chat",  # no date: stamped when imported, as before
                "messages": [{"role": "user", "content": "Caroline: pottery is fun"}],
            },
        ],
    )
    store = SQLiteStore(home / "state.db")
    try:
        dated = store.get_session("default", "session_1")
        assert dated is not None and dated.started_at == title_time("1:56 pm on 8 May, 2023")
        assert {m.timestamp for m in store.get_messages("default", "session_1")} == {
            dated.started_at
        }
        services = Services()
        services.provide(store, Store)  # type: ignore[type-abstract]
        services.provide(Settings(home=home, timezone="UTC"))
        ctx = ToolContext(scope="default", session_id="live", services=services)
        outcome = await Toolset([session_search]).call(
            "session_search",
            json.dumps({"query": "When did Caroline go to the support group?"}),
            ctx,
        )
        assert outcome.ok, outcome.text
        (first, *_) = json.loads(outcome.text)["results"]
        assert first["session_id"] == "session_1"
        assert first["when"] == "2023-05-08 13:56" == first["session_started"]
        assert "support group yesterday" in json.dumps(first["messages"])
    finally:
        store.close()
