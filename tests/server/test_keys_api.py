"""`/api/keys` (issue 37): scoped keys created, listed and revoked over HTTP as with
`hermes keys`, owner only, on both backends; the secret is in the creation answer only."""

from __future__ import annotations

import pytest

from .conftest import Api

pytestmark = pytest.mark.usefixtures("on_each_backend")


async def test_create_list_revoke(keyed_api: Api) -> None:
    r = await keyed_api.client.post(
        "/api/keys", json={"user": "alice", "label": "alice's phone", "expires": "30d"}
    )
    assert r.status_code == 201, r.text
    assert r.headers["cache-control"] == "no-store"
    made = r.json()
    secret, key = made["secret"], made["key"]
    assert secret.startswith(f"hk_{key['id']}_")
    assert key["user"] == "alice" and key["state"] == "active" and key["expires_at"]
    as_alice = {"Authorization": f"Bearer {secret}"}
    me = await keyed_api.client.get("/api/me", headers=as_alice)
    assert me.status_code == 200 and me.json()["user"] == "alice"

    listed = (await keyed_api.client.get("/api/keys")).json()
    assert [k["id"] for k in listed["keys"]] == [key["id"]]
    # the random part may hold "_" itself: it is what follows the id
    assert secret not in str(listed)
    assert secret.removeprefix(f"hk_{key['id']}_") not in str(listed)
    assert listed["quotas"] == {
        "requests_per_minute": None,
        "turns_per_day": None,
        "apply_to_owner": False,
    }

    gone = await keyed_api.client.delete(f"/api/keys/{key['id']}")
    assert gone.status_code == 200 and gone.json() == {"id": key["id"], "revoked": True}
    refused = await keyed_api.client.get("/api/me", headers=as_alice)
    assert refused.status_code == 401  # at once, not after the cache's few seconds
    listed = (await keyed_api.client.get("/api/keys")).json()["keys"]
    assert listed[0]["state"] == "revoked" and listed[0]["revoked"] is True
    again = await keyed_api.client.delete(f"/api/keys/{key['id']}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "key_not_found"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"user": "bad user!"}, "user"),
        ({"user": "alice", "expires": "soon"}, "expires"),
        ({"user": "alice", "expires": "0d"}, "expires"),
        ({"user": "alice", "label": "x" * 201}, "label"),
        ({"user": "alice", "colour": "red"}, "colour"),
    ],
)
async def test_bad_input_is_a_400_that_says_why(
    keyed_api: Api, body: dict[str, str], param: str
) -> None:
    r = await keyed_api.client.post("/api/keys", json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["message"] and param in (error["param"] or "") + error["message"]
    assert (await keyed_api.client.get("/api/keys")).json()["keys"] == []
    bad = await keyed_api.client.delete("/api/keys/not-a-key")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "id"


async def test_a_scoped_key_may_not_manage_keys(keyed_api: Api) -> None:
    made = (await keyed_api.client.post("/api/keys", json={"user": "bob"})).json()
    as_bob = {"Authorization": f"Bearer {made['secret']}"}
    for method, path in [
        ("GET", "/api/keys"),
        ("POST", "/api/keys"),
        ("DELETE", f"/api/keys/{made['key']['id']}"),
    ]:
        kw = {"json": {"user": "bob"}} if method == "POST" else {}
        r = await keyed_api.client.request(method, path, headers=as_bob, **kw)
        assert r.status_code == 403, (method, path, r.text)
        assert r.json()["error"]["code"] == "admin_only"
    assert len((await keyed_api.client.get("/api/keys")).json()["keys"]) == 1
