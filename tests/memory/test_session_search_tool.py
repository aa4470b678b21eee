"""The `session_search` tool's four shapes, its scope confinement and live-session exclusion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes.config.settings import Settings
from hermes.recall.search import session_search
from hermes.services import Services
from hermes.store.base import NewMessage, Store
from hermes.store.sqlite import SQLiteStore
from hermes.tools.registry import ToolContext, Toolset

TOOLS = Toolset([session_search])


@pytest.fixture
def store(home: Path):
    s = SQLiteStore(home / "state.db")
    yield s
    s.close()


def fill(
    store: SQLiteStore, scope: str, session: str, texts: list[str], ts: float = 1_700_000_000
) -> None:
    store.ensure_session(scope, session, source="cli", started_at=ts)
    store.append_messages(
        scope,
        session,
        [
            NewMessage("user" if i % 2 == 0 else "assistant", t, timestamp=ts + i)
            for i, t in enumerate(texts)
        ],
    )


def _services(home: Path, store: SQLiteStore) -> Services:
    services = Services(Settings(home=home, timezone="UTC"))
    services.provide(store, Store)  # type: ignore[type-abstract]
    return services


async def search(
    store: SQLiteStore, home: Path, scope: str = "default", live: str = "live", **args: object
) -> tuple[bool, dict | str]:
    ctx = ToolContext(
        scope=scope,
        session_id=live,
        services=_services(home, store),
    )
    outcome = await TOOLS.call("session_search", json.dumps(args), ctx)
    return outcome.ok, json.loads(outcome.text) if outcome.ok else outcome.text


@pytest.fixture
def history(store: SQLiteStore) -> SQLiteStore:
    long = [f"filler turn {i} about nothing in particular" for i in range(40)]
    long[21] = "we finally decided the cabin trip goes to Lake Tahoe in June"
    fill(store, "default", "trip", long)
    fill(
        store,
        "default",
        "pets",
        [
            "we adopted a beagle named Biscuit",
            "Biscuit is a lovely name",
            "thanks",
            "you're welcome",
        ],
        ts=1_700_100_000,
    )
    fill(store, "default", "live", ["Lake Tahoe again, in the live chat"], ts=1_700_200_000)
    fill(store, "user:bob", "bob-trip", ["Bob goes to Lake Tahoe in secret BOB-SECRET"])
    return store


async def test_discovery_returns_match_neighbours_and_bookends(
    history: SQLiteStore, home: Path
) -> None:
    ok, result = await search(history, home, query="Tahoe cabin trip")
    assert ok and result["shape"] == "discover"
    assert [r["session_id"] for r in result["results"]] == ["trip"]  # live session excluded
    top = result["results"][0]
    assert top["match_index"] == 21 and "[Tahoe]" in top["snippet"]
    assert [m["index"] for m in top["messages"]] == [19, 20, 21, 22, 23]
    assert [m["index"] for m in top["bookend_start"]] == [0, 1]
    assert [m["index"] for m in top["bookend_end"]] == [38, 39]
    assert top["when"] == "2023-11-14 22:13" and top["message_count"] == 40
    assert "BOB-SECRET" not in json.dumps(result)


async def test_discovery_dedupes_sessions_and_limits(history: SQLiteStore, home: Path) -> None:
    ok, result = await search(history, home, query="Biscuit beagle name", limit=5)
    assert ok and [r["session_id"] for r in result["results"]] == ["pets"]
    assert result["results"][0]["other_matches"]  # the second Biscuit message, same session
    ok, result = await search(history, home, query="zzzunknownword")
    assert ok and result["results"] == [] and "try other words" in result["hint"]


async def test_scroll_read_and_browse(history: SQLiteStore, home: Path) -> None:
    ok, result = await search(history, home, session_id="trip", around=21, window=2)
    assert ok and [m["index"] for m in result["messages"]] == [19, 20, 21, 22, 23]
    assert result["messages_before"] == 19 and result["messages_after"] == 16
    ok, result = await search(history, home, session_id="pets")
    assert ok and [m["index"] for m in result["messages"]] == [0, 1, 2, 3] and "tail" not in result
    ok, result = await search(history, home, session_id="trip")
    assert (
        ok
        and len(result["messages"]) == 20
        and [m["index"] for m in result["tail"]] == list(range(30, 40))
    )
    assert "messages 20 to 29 not shown" in result["omitted"]
    ok, result = await search(history, home)
    assert ok and [s["session_id"] for s in result["sessions"]] == ["pets", "trip"]
    assert result["sessions"][0]["preview"] == "we adopted a beagle named Biscuit"


@pytest.mark.parametrize(
    "args, fragment",
    [
        ({"session_id": "live"}, "current conversation"),
        ({"session_id": "bob-trip"}, "no past session 'bob-trip'"),
        ({"session_id": "trip", "around": 99}, "0 to 39"),
        ({"around": 3}, "around needs a session_id"),
        ({"query": "x", "session_id": "trip"}, "either query or session_id"),
    ],
)
async def test_errors_are_sentences(
    history: SQLiteStore, home: Path, args: dict, fragment: str
) -> None:
    ok, text = await search(history, home, **args)
    assert not ok and fragment in text


async def test_another_scope_sees_nothing_and_the_owner_does(
    history: SQLiteStore, home: Path
) -> None:
    for args in (
        {"query": "Tahoe"},
        {"session_id": "trip"},
        {"session_id": "trip", "around": 21},
        {},
    ):
        ok, result = await search(history, home, scope="user:bob", live="probe", **args)
        assert "cabin trip" not in json.dumps(result), args
    ok, result = await search(history, home, scope="user:bob", live="probe", query="Tahoe")
    assert [r["session_id"] for r in result["results"]] == ["bob-trip"]  # positive control
