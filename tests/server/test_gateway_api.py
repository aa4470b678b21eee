"""`/api/gateway` (issue 37): adapter state as `hermes gateway status --json`, pairing
requests listed, approved and denied as `hermes gateway pair`; owner only."""

from __future__ import annotations

import json
from pathlib import Path

from hermes.gateway.access import PairingStore
from hermes.gateway.state import StatusFile

from ..conftest import run_cli
from .conftest import Api


async def test_status_is_the_cli_report(keyed_api: Api, home: Path) -> None:
    StatusFile(home).write(
        {"telegram": {"connected": True, "messages_in": 3, "last_error": None}}, force=True
    )
    r = await keyed_api.client.get("/api/gateway")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["running"] is True and body["busy_mode"] == "interrupt"
    assert body["adapters"]["telegram"]["connected"] is True
    assert body["adapters"]["telegram"]["messages_in"] == 3
    assert body["pairing"] is False and body["owners"] == []
    cli = run_cli("gateway", "status", "--json")
    assert cli.returncode == 0, cli.stderr
    shared = {k: v for k, v in body.items() if k not in ("pairing", "owners")}
    assert shared == json.loads(cli.stdout)


async def test_approve_and_deny_pairing_requests(keyed_api: Api, home: Path) -> None:
    store = PairingStore(home)
    alice = store.offer("telegram:111", "Alice")
    mallory = store.offer("telegram:666", "Mallory")
    assert alice and mallory
    r = await keyed_api.client.get("/api/gateway/pairing")
    assert r.status_code == 200
    pending = {p["identity"]: p for p in r.json()["pending"]}
    assert (
        pending["telegram:111"]["code"] == alice.code and pending["telegram:111"]["name"] == "Alice"
    )
    assert pending["telegram:111"]["expires_at"] - pending["telegram:111"]["created_at"] == 3600

    ok = await keyed_api.client.post(f"/api/gateway/pairing/{alice.code.lower()}/approve")
    assert ok.status_code == 200 and ok.json() == {"approved": "telegram:111"}
    no = await keyed_api.client.post(f"/api/gateway/pairing/{mallory.code}/deny")
    assert no.status_code == 200 and no.json() == {"denied": "telegram:666"}
    assert "telegram:111" in store.approved() and "telegram:666" not in store.approved()
    after = (await keyed_api.client.get("/api/gateway/pairing")).json()
    assert after["pending"] == [] and [a["identity"] for a in after["approved"]] == ["telegram:111"]

    again = await keyed_api.client.post(f"/api/gateway/pairing/{alice.code}/approve")
    assert again.status_code == 404 and again.json()["error"]["code"] == "pairing_code_not_found"
    bad = await keyed_api.client.post("/api/gateway/pairing/nope!/deny")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "code"


async def test_codes_are_never_shown_to_a_scoped_key(keyed_api: Api, home: Path) -> None:
    offer = PairingStore(home).offer("telegram:222", "Bob")
    assert offer
    made = (await keyed_api.client.post("/api/keys", json={"user": "bob"})).json()
    as_bob = {"Authorization": f"Bearer {made['secret']}"}
    for method, path in [
        ("GET", "/api/gateway"),
        ("GET", "/api/gateway/pairing"),
        ("POST", f"/api/gateway/pairing/{offer.code}/approve"),
        ("POST", f"/api/gateway/pairing/{offer.code}/deny"),
    ]:
        r = await keyed_api.client.request(method, path, headers=as_bob)
        assert r.status_code == 403 and offer.code not in r.text, (method, path)
    assert PairingStore(home).pending()[0]["code"] == offer.code
