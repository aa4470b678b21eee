"""Every owner-only route the dashboard's admin screens use (issue 37) refuses a scoped key
with 403 in the error format, and each is in the OpenAPI document with a summary."""

from __future__ import annotations

import pytest

from .conftest import Api

pytestmark = pytest.mark.usefixtures("on_each_backend")

ADMIN_ROUTES = [
    ("GET", "/api/users"),
    ("GET", "/api/users/alice/export"),
    ("DELETE", "/api/users/alice"),
    ("GET", "/api/keys"),
    ("POST", "/api/keys"),
    ("DELETE", "/api/keys/0123456789ab"),
    ("GET", "/api/logs"),
    ("GET", "/api/logs/stream"),
    ("GET", "/api/gateway"),
    ("GET", "/api/gateway/pairing"),
    ("POST", "/api/gateway/pairing/ABCDEFGH/approve"),
    ("POST", "/api/gateway/pairing/ABCDEFGH/deny"),
    ("GET", "/api/mcp"),
]
NEW_PATHS = {
    "/api/keys": {"get", "post"},
    "/api/keys/{key_id}": {"delete"},
    "/api/logs": {"get"},
    "/api/logs/stream": {"get"},
    "/api/gateway": {"get"},
    "/api/gateway/pairing": {"get"},
    "/api/gateway/pairing/{code}/approve": {"post"},
    "/api/gateway/pairing/{code}/deny": {"post"},
    "/api/mcp": {"get"},
}


async def test_a_scoped_key_is_refused_on_every_admin_route(keyed_api: Api) -> None:
    made = (await keyed_api.client.post("/api/keys", json={"user": "alice"})).json()
    as_alice = {"Authorization": f"Bearer {made['secret']}"}
    for method, path in ADMIN_ROUTES:
        kw = {"json": {"user": "alice"}} if method == "POST" else {}
        r = await keyed_api.client.request(method, path, headers=as_alice, **kw)
        assert r.status_code == 403, (method, path, r.text)
        error = r.json()["error"]
        assert error["type"] == "permission_error" and error["code"] == "admin_only", path
        route = path.replace("alice", "{user_id}").replace("0123456789ab", "{key_id}")
        route = route.replace("ABCDEFGH", "{code}")  # the route as declared: no values echoed
        assert error["message"].startswith(f"{method} {route} needs the server key"), error
    assert (await keyed_api.client.get("/api/me", headers=as_alice)).json()["user"] == "alice"


async def test_new_routes_are_documented(keyed_api: Api) -> None:
    document = keyed_api.app.openapi()
    for path, methods in NEW_PATHS.items():
        assert path in document["paths"], path
        for method in methods:
            operation = document["paths"][path][method]
            assert operation.get("summary"), (method, path)
