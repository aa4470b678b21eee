"""`/api/users` (SPEC §13): list, export and forget end users; admin only; on both backends.

Forgetting is checked from the outside in: after `DELETE /api/users/{id}` the user's key is
refused, search finds nothing of them, and no table row, search index entry or file under
HERMES_HOME holds their id or a word only they used, while another user's data is intact.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from hermes.config.settings import Settings
from hermes.memory.notes import open_notes
from hermes.recall.search import search_hits
from hermes.scopes import scope_for_user
from hermes.store.transfer import parse_jsonl

from .conftest import Api
from .user_data import leftovers, seed_user

pytestmark = pytest.mark.usefixtures("on_each_backend")

ALICE, BOB = "alice-7f3", "bob-9c1"
ALICE_WORD, BOB_WORD = "quokkaberry", "wombatplum"


async def _seed_both(api: Api, settings: Settings) -> tuple[dict[str, str], dict[str, str]]:
    store = api.runtime.store
    return (
        await seed_user(settings, store, ALICE, ALICE_WORD),
        await seed_user(settings, store, BOB, BOB_WORD),
    )


async def test_list_users(keyed_api: Api, keyed_settings: Settings) -> None:
    await _seed_both(keyed_api, keyed_settings)
    r = await keyed_api.client.get("/api/users")
    assert r.status_code == 200
    users = {u["id"]: u for u in r.json()["users"]}
    assert set(users) == {ALICE, BOB}
    assert users[ALICE]["sessions"] == 2 and users[ALICE]["messages"] == 3
    assert users[ALICE]["last_active"] > 0


async def test_forget_user_everywhere(keyed_api: Api, keyed_settings: Settings) -> None:
    alice, bob = await _seed_both(keyed_api, keyed_settings)
    store = keyed_api.runtime.store
    assert (await keyed_api.client.get("/v1/models", headers=_bearer(alice))).status_code == 200

    r = await keyed_api.client.delete(f"/api/users/{ALICE}")
    assert r.status_code == 200, r.text
    counts = r.json()
    assert counts["forgotten"] == ALICE
    expected = {"api_keys": 1, "sessions": 2, "messages": 3, "notes": 2, "jobs": 1}
    assert {k: counts[k] for k in expected} == expected
    assert counts["job_outputs"] == 1 and counts["responses"] == 1 and counts["pairing"] == 1

    r = await keyed_api.client.get("/v1/models", headers=_bearer(alice))
    assert r.status_code == 401  # the key is gone at once, not after the cache expires
    assert search_hits(store, alice["scope"], ALICE_WORD) == []
    found = await keyed_api.client.get(
        "/api/sessions", params={"q": ALICE_WORD}, headers={"X-Hermes-User-Id": ALICE}
    )
    assert found.status_code == 200 and found.json()["sessions"] == []
    assert leftovers(keyed_settings, store, ALICE, ALICE_WORD) == []

    # bob is untouched
    assert [h.session_id for h in search_hits(store, bob["scope"], BOB_WORD)]
    notes = open_notes(keyed_settings, bob["scope"], store)
    assert notes.read("user").entries == [f"Loves the {BOB_WORD} festival"]
    assert (await keyed_api.client.get("/v1/models", headers=_bearer(bob))).status_code == 200
    assert leftovers(keyed_settings, store, BOB, BOB_WORD) != []
    users = (await keyed_api.client.get("/api/users")).json()["users"]
    assert [u["id"] for u in users] == [BOB]


async def test_forget_is_idempotent(keyed_api: Api, keyed_settings: Settings) -> None:
    await _seed_both(keyed_api, keyed_settings)
    first = await keyed_api.client.delete(f"/api/users/{ALICE}")
    again = await keyed_api.client.delete(f"/api/users/{ALICE}")
    never = await keyed_api.client.delete("/api/users/nobody")
    assert first.status_code == again.status_code == never.status_code == 200
    assert again.json()["forgotten"] == ALICE
    assert all(v == 0 for k, v in again.json().items() if k != "forgotten")
    assert all(v == 0 for k, v in never.json().items() if k != "forgotten")


async def test_export_archive_round_trips(keyed_api: Api, keyed_settings: Settings) -> None:
    await _seed_both(keyed_api, keyed_settings)
    r = await keyed_api.client.get(f"/api/users/{ALICE}/export")
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(r.content))
    names = set(archive.namelist())
    assert {"user.json", "sessions.jsonl", "keys.json"} <= names
    assert "files/memories/USER.md" in names and "files/cron/jobs.json" in names
    sessions = parse_jsonl(archive.read("sessions.jsonl").decode().splitlines())
    assert sorted(s.id for s in sessions) == ["s1", "s2"]
    assert BOB_WORD.encode() not in r.content
    keys = json.loads(archive.read("keys.json"))
    assert [k["user"] for k in keys] == [ALICE] and "hash" not in json.dumps(keys)

    # what was exported comes back through the sessions import, the same format
    await keyed_api.client.delete(f"/api/users/{ALICE}")
    r = await keyed_api.client.post(
        "/api/sessions/import",
        content=archive.read("sessions.jsonl"),
        headers={"X-Hermes-User-Id": ALICE, "Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["imported"] == 2
    assert len(keyed_api.runtime.store.get_messages(scope_for_user(ALICE), "s1")) == 2


async def test_export_of_nobody_is_404(keyed_api: Api) -> None:
    r = await keyed_api.client.get("/api/users/nobody/export")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "user_not_found"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/users"),
        ("GET", f"/api/users/{BOB}/export"),
        ("DELETE", f"/api/users/{BOB}"),
        ("GET", f"/api/users/{ALICE}/export"),  # not even their own: users are the admin's
        ("DELETE", f"/api/users/{ALICE}"),
    ],
)
async def test_a_scoped_key_gets_403(
    keyed_api: Api, keyed_settings: Settings, method: str, path: str
) -> None:
    alice, _ = await _seed_both(keyed_api, keyed_settings)
    r = await keyed_api.client.request(method, path, headers=_bearer(alice))
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "admin_only"
    assert BOB_WORD not in r.text
    assert (await keyed_api.client.get("/api/users")).json()["users"]  # nothing was forgotten


@pytest.mark.parametrize("user", ["bad%20user", "x" * 257, "a%01b", "%C3%A9"])
async def test_bad_user_id_is_400(keyed_api: Api, user: str) -> None:
    r = await keyed_api.client.delete(f"/api/users/{user}")
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_user_id"
    assert "user id" in r.json()["error"]["message"]


async def test_without_the_server_key_is_401(keyed_api: Api) -> None:
    r = await keyed_api.client.get("/api/users", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401


async def test_in_the_openapi_document(keyed_api: Api) -> None:
    spec = keyed_api.app.openapi()
    assert spec["paths"]["/api/users"]["get"]["summary"] == "List end users"
    assert "delete" in spec["paths"]["/api/users/{user_id}"]


def _bearer(seeded: dict[str, str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {seeded['key']}"}
