"""User A's notes, sessions and search hits never reach user B: tool, agent, API and CLI.

Every check has a positive control (A does see it), so nothing passes because nothing was stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from pydantic import SecretStr

from hermes import tls
from hermes.agent.turn import TurnRequest
from hermes.config.settings import Settings
from hermes.memory.notes import NotesStore
from hermes.memory.tool import Operation, change_notes
from hermes.runtime import Runtime, build_runtime
from hermes.server.app import create_app
from hermes.store.sqlite import SQLiteStore
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.conftest import run_cli

SECRET = "ORCHID-7731"
NOTE = f"Favourite flower code {SECRET}"
KEY = "memory-isolation-key-0123456789"


def seen(fake: FakeModel) -> str:
    return json.dumps(fake.chat_requests()[-1])


def tool_results(fake: FakeModel) -> str:
    return json.dumps(
        [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    )


async def test_agent_turns_keep_scopes_apart(runtime: Runtime, fake: FakeModel) -> None:
    agent = runtime.agent
    fake.enqueue(
        ToolCalls([("memory", {"target": "user", "action": "add", "content": NOTE})]), Text("saved")
    )
    await agent.run_turn(
        TurnRequest(f"my flower code is {SECRET}", session_id="a1", scope="user:alice")
    )
    for scope in ("user:bob", "default", "user:Alice"):
        fake.enqueue(Text("hi"))
        await agent.run_turn(TurnRequest("hello", session_id="new", scope=scope))
        assert SECRET not in seen(fake), scope
        for args in ({"query": "flower code"}, {"session_id": "a1"}, {}):
            fake.enqueue(ToolCalls([("session_search", args)]), Text("nothing"))
            await agent.run_turn(TurnRequest("search", session_id="probe", scope=scope))
            assert SECRET not in tool_results(fake), (scope, args)
        fake.enqueue(
            ToolCalls([("memory", {"target": "user", "action": "remove", "old_text": "flower"})]),
            Text("no"),
        )
        await agent.run_turn(TurnRequest("forget my flower", session_id="probe", scope=scope))
        assert "no entry contains" in tool_results(fake)
    # positive controls: Alice sees her note and finds her session
    fake.enqueue(ToolCalls([("session_search", {"query": "flower code"})]), Text("found"))
    await agent.run_turn(TurnRequest("search", session_id="a2", scope="user:alice"))
    assert NOTE in json.dumps(fake.chat_requests()[-2]["messages"][0]) and SECRET in tool_results(
        fake
    )


async def test_api_keeps_notes_and_search_per_user(settings: Settings, fake: FakeModel) -> None:
    settings.server.api_key = SecretStr(KEY)
    runtime = build_runtime(settings)
    app = create_app(runtime)
    alice = {"Authorization": f"Bearer {KEY}", "X-Hermes-User-Id": "alice"}
    bob = {"Authorization": f"Bearer {KEY}", "X-Hermes-User-Id": "bob"}

    def body(text: str) -> dict:
        return {"model": "hermes", "messages": [{"role": "user", "content": text}]}

    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), transport=httpx.ASGITransport(app), base_url="http://t"
        ) as client:

            async def chat(headers: dict, session: str, text: str) -> None:
                r = await client.post(
                    "/v1/chat/completions",
                    json=body(text),
                    headers={**headers, "X-Hermes-Session-Id": session},
                )
                assert r.status_code == 200, r.text

            fake.enqueue(
                ToolCalls([("memory", {"target": "user", "action": "add", "content": NOTE})]),
                Text("saved"),
            )
            await chat(alice, "a1", f"my flower code is {SECRET}")
            fake.enqueue(ToolCalls([("session_search", {"query": "flower code"})]), Text("none"))
            await chat(bob, "b1", "what is my code?")
            assert SECRET not in seen(fake)
            fake.enqueue(ToolCalls([("session_search", {"query": "flower code"})]), Text("found"))
            await chat(alice, "a2", "what is my code?")
            assert NOTE in json.dumps(fake.chat_requests()[-2]) and SECRET in tool_results(fake)


def _jsonl(path: Path, session: str, text: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "id": session,
                "messages": [
                    {"role": "user", "content": text},
                    {"role": "assistant", "content": "Got it."},
                ],
            }
        )
        + "\n"
    )
    return path


def test_cli_keeps_users_apart_and_forget_erases_one(home: Path, tmp_path: Path) -> None:
    assert (
        run_cli(
            "sessions",
            "import",
            str(_jsonl(tmp_path / "a.jsonl", "a1", f"code {SECRET}")),
            "--user",
            "alice",
        ).returncode
        == 0
    )
    assert (
        run_cli(
            "sessions",
            "import",
            str(_jsonl(tmp_path / "b.jsonl", "b1", "bob likes tulips")),
            "--user",
            "bob",
        ).returncode
        == 0
    )
    notes = Settings(home=home)
    change_notes(NotesStore(home, "user:alice", notes.memory), "user", [Operation("add", NOTE)])
    change_notes(
        NotesStore(home, "user:bob", notes.memory), "user", [Operation("add", "Bob: tulips")]
    )

    def search(user: str) -> list[dict]:
        r = run_cli("sessions", "search", f"code {SECRET} tulips", "--user", user, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["hits"]

    assert {h["session_id"] for h in search("bob")} == {"b1"}
    assert {h["session_id"] for h in search("alice")} == {"a1"}
    shown = run_cli("memory", "show", "--user", "bob")
    assert "Bob: tulips" in shown.stdout and SECRET not in shown.stdout
    assert SECRET in run_cli("memory", "show", "--user", "alice").stdout
    r = run_cli("memory", "forget", "--user", "alice", "--yes")
    assert r.returncode == 0 and "removed their notes and 1 session(s)" in r.stdout
    assert {h["session_id"] for h in search("bob")} == {"b1"}
    store = SQLiteStore(home / "state.db")
    try:
        assert store.list_sessions("user:alice") == [] and store.list_sessions("user:bob")
    finally:
        store.close()
    assert NotesStore(home, "user:alice", notes.memory).read("user").entries == []
    assert NotesStore(home, "user:bob", notes.memory).read("user").entries == ["Bob: tulips"]
