"""`/api/memory/history` and `/api/memory/revert` (SPEC §13, issue 36): the caller's own
history only, "why does it think that?" links to the message that wrote an entry, reverts
recorded as `api` with the key's name, §6 errors for bad input. On both store backends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hermes.auth.keys import create_key
from hermes.config.settings import Settings
from hermes.memory.history import CLI
from hermes.memory.notes import open_notes
from hermes.memory.tool import Operation, change_notes
from hermes.scopes import scope_for_user
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

from .conftest import AUTH, open_api

pytestmark = pytest.mark.usefixtures("on_each_backend")


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_why_links_an_entry_to_the_message_that_wrote_it(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    keyed_settings.memory.review_interval = 0
    fake.enqueue(
        ToolCalls([("memory", {"target": "user", "action": "add", "content": "Lives in Berlin"})]),
        Text("Noted."),
    )
    async with open_api(keyed_settings) as api:
        api.client.headers.update(AUTH)
        r = await api.chat("I live in Berlin.", headers={"X-Hermes-Session-Id": "chat-1"})
        assert r.status_code == 200, r.text
        r = await api.client.get("/api/memory/history", params={"entry": "berlin"})
        assert r.status_code == 200, r.text
        [v] = r.json()["versions"]
        assert (v["actor"], v["target"], v["session_id"]) == ("tool", "user", "chat-1")
        assert v["link"] == f"/api/sessions/chat-1/messages?offset={v['turn']}&limit=1"
        messages = api.runtime.store.get_messages("default", "chat-1")
        assert messages[v["turn"]].tool_calls is not None  # the call that wrote the entry
        assert messages[v["turn"]].tool_calls[0]["function"]["name"] == "memory"
        detail = (await api.client.get(f"/api/memory/history/{v['id']}")).json()
        assert detail["before"] == "" and detail["after"] == "Lives in Berlin\n"
        assert "+Lives in Berlin" in detail["diff"]


async def test_list_detail_and_revert_as_a_scoped_key(keyed_settings: Settings) -> None:
    async with open_api(keyed_settings) as api:
        store = api.runtime.store
        token, _ = await asyncio.to_thread(create_key, store, "ann", label="ann-phone")
        ann = _bearer(token)
        notes = open_notes(keyed_settings, scope_for_user("ann"), store)
        await asyncio.to_thread(change_notes, notes, "user", [Operation("add", "Likes tea")], CLI)
        await asyncio.to_thread(change_notes, notes, "user", [Operation("add", "Plays go")], CLI)
        r = await api.client.get("/api/memory/history", headers=ann, params={"target": "user"})
        latest, first = r.json()["versions"]
        assert latest["reason"] == "add: Plays go" and "before" not in latest
        r = await api.client.post("/api/memory/revert", headers=ann, json={"version": latest["id"]})
        assert r.status_code == 200, r.text
        new: dict[str, Any] = r.json()["version"]
        assert (new["actor"], new["key"], new["reverts"]) == ("api", "ann-phone", latest["id"])
        assert notes.read("user").entries == ["Likes tea"]
        again = await api.client.post(
            "/api/memory/revert", headers=ann, json={"version": latest["id"]}
        )
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "revert_conflict"
        redo = await api.client.post("/api/memory/revert", headers=ann, json={"version": new["id"]})
        assert redo.status_code == 200 and notes.read("user").entries == ["Likes tea", "Plays go"]


async def test_a_scoped_user_never_reads_another_users_history(keyed_settings: Settings) -> None:
    async with open_api(keyed_settings) as api:
        store = api.runtime.store
        token, _ = await asyncio.to_thread(create_key, store, "bob")
        bob = _bearer(token)
        ann_notes = open_notes(keyed_settings, scope_for_user("ann"), store)
        await asyncio.to_thread(
            change_notes, ann_notes, "user", [Operation("add", "Ann lives in Berlin")], CLI
        )
        r = await api.client.get("/api/memory/history", headers={**AUTH, "X-Hermes-User-Id": "ann"})
        [ann_version] = r.json()["versions"]
        mine = await api.client.get("/api/memory/history", headers=bob)
        assert mine.status_code == 200 and mine.json()["versions"] == []
        why = await api.client.get("/api/memory/history", headers=bob, params={"entry": "Berlin"})
        assert why.json()["versions"] == []
        peek = await api.client.get(f"/api/memory/history/{ann_version['id']}", headers=bob)
        assert peek.status_code == 404 and peek.json()["error"]["code"] == "version_not_found"
        undo = await api.client.post(
            "/api/memory/revert", headers=bob, json={"version": ann_version["id"]}
        )
        assert undo.status_code == 404
        other = await api.client.get(
            "/api/memory/history", headers={**bob, "X-Hermes-User-Id": "ann"}
        )
        assert other.status_code == 403
        assert ann_notes.read("user").entries == ["Ann lives in Berlin"]  # nothing touched


async def test_bad_input_is_a_4xx_in_the_error_format(keyed_settings: Settings) -> None:
    async with open_api(keyed_settings) as api:
        api.client.headers.update(AUTH)
        cases = [
            await api.client.get("/api/memory/history", params={"target": "nope"}),
            await api.client.get("/api/memory/history", params={"limit": 0}),
            await api.client.get("/api/memory/history", params={"entry": "  "}),
            await api.client.get("/api/memory/history/abc"),
            await api.client.get("/api/memory/history/999999"),
            await api.client.post("/api/memory/revert", json={}),
            await api.client.post("/api/memory/revert", json={"version": "x"}),
            await api.client.post("/api/memory/revert", json={"version": 1, "extra": 1}),
            await api.client.post("/api/memory/revert", json={"version": 999999}),
            # past a 64-bit id (the OpenAPI fuzz test found it a 500)
            await api.client.post("/api/memory/revert", json={"version": 2**70}),
            await api.client.get(f"/api/memory/history/{2**70}"),
        ]
        for r in cases:
            assert 400 <= r.status_code < 500, (r.request.url, r.status_code, r.text)
            error = r.json()["error"]
            assert error["message"] and error["type"] and error["code"]
        listed = (await api.client.get("/api/memory/history")).json()["versions"]
        assert {v["actor"] for v in listed} <= {"baseline"}  # starter skills, as found
        unauthenticated = await api.client.get(
            "/api/memory/history", headers={"Authorization": "Bearer wrong"}
        )
        assert unauthenticated.status_code == 401
