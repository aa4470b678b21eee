"""`/api/sessions` (SPEC §13): list and search, read, rename, delete, fork, export/import, in
the caller's scope only, on both backends."""

from __future__ import annotations

import json

import pytest

from hermes.auth.keys import create_key
from hermes.scopes import scope_for_user
from hermes.store.base import NewMessage, Store
from hermes.store.transfer import export_sessions

from ..conftest import run_cli
from .conftest import Api

pytestmark = pytest.mark.usefixtures("on_each_backend")


def _seed(store: Store, scope: str, session_id: str, title: str, *texts: str) -> None:
    store.ensure_session(scope, session_id, source="api", title=title)
    store.append_messages(
        scope,
        session_id,
        [NewMessage("user" if n % 2 == 0 else "assistant", t) for n, t in enumerate(texts)],
    )


@pytest.fixture
def owner_data(keyed_api: Api) -> Store:
    store = keyed_api.runtime.store
    _seed(store, "default", "trip", "Lisbon trip", "Book a hotel in Lisbon", "Done: Alfama.")
    _seed(store, "default", "repo:facebook/react", "React bug", "The hooks crash", "Fixed.")
    _seed(store, scope_for_user("bob"), "bob-1", "Bob secret", "bob's zanzibar plans", "ok")
    return store


async def test_list_get_rename_delete(keyed_api: Api, owner_data: Store) -> None:
    c = keyed_api.client
    r = await c.get("/api/sessions")
    assert r.status_code == 200
    assert {s["id"] for s in r.json()["sessions"]} == {"trip", "repo:facebook/react"}
    assert [s["id"] for s in (await c.get("/api/sessions?limit=1&offset=1")).json()["sessions"]]

    r = await c.get("/api/sessions/repo:facebook/react")  # an id holding a slash
    assert r.status_code == 200 and r.json()["session"]["message_count"] == 2

    r = await c.patch("/api/sessions/trip", json={"title": "Portugal"})
    assert r.status_code == 200 and r.json()["session"]["title"] == "Portugal"
    assert (await c.get("/api/sessions/trip")).json()["session"]["title"] == "Portugal"

    r = await c.delete("/api/sessions/trip")
    assert r.status_code == 200 and r.json() == {"id": "trip", "deleted": True}
    assert (await c.get("/api/sessions/trip")).status_code == 404
    assert (await c.delete("/api/sessions/trip")).status_code == 404


async def test_search_titles_and_messages(keyed_api: Api, owner_data: Store) -> None:
    c = keyed_api.client
    by_title = (await c.get("/api/sessions", params={"q": "react"})).json()["sessions"]
    assert by_title[0]["id"] == "repo:facebook/react" and by_title[0]["match"]["in"] == "title"
    by_text = (await c.get("/api/sessions", params={"q": "hotel"})).json()["sessions"]
    assert [s["id"] for s in by_text] == ["trip"]
    assert "hotel" in by_text[0]["match"]["snippet"]
    assert (await c.get("/api/sessions", params={"q": "zanzibar"})).json()["sessions"] == []
    none = await c.get("/api/sessions", params={"q": "hotel", "source": "cli"})
    assert none.json()["sessions"] == []


async def test_messages_mark_compression_and_undo(keyed_api: Api, owner_data: Store) -> None:
    store = owner_data
    store.append_messages("default", "trip", [NewMessage("user", "And a car?")])
    store.add_compaction(
        "default", "trip", head_end=0, upto_idx=2, summary="Hotel booked.", kind="auto"
    )
    store.hide_messages("default", "trip", start=2, end=3)
    r = await keyed_api.client.get("/api/sessions/trip/messages")
    assert r.status_code == 200
    body = r.json()
    assert [m["compressed"] for m in body["messages"]] == [True, True, False]
    assert [m["hidden"] for m in body["messages"]] == [False, False, True]
    assert body["compressions"][0]["summary"] == "Hotel booked."
    assert body["hidden_ranges"] == [[2, 3]]
    page = (await keyed_api.client.get("/api/sessions/trip/messages?offset=1&limit=1")).json()
    assert [m["index"] for m in page["messages"]] == [1]


async def test_fork(keyed_api: Api, owner_data: Store) -> None:
    c = keyed_api.client
    r = await c.post("/api/sessions/trip/fork", json={"id": "trip-b", "title": "Plan B"})
    assert r.status_code == 201, r.text
    session = r.json()["session"]
    assert session["id"] == "trip-b" and session["parent_session_id"] == "trip"
    assert session["message_count"] == 2 and session["title"] == "Plan B"
    texts = [
        m["content"] for m in (await c.get("/api/sessions/trip-b/messages")).json()["messages"]
    ]
    assert texts == ["Book a hotel in Lisbon", "Done: Alfama."]
    r = await c.post("/api/sessions/trip/fork")  # no body: an id is made up
    assert r.status_code == 201 and r.json()["session"]["id"].startswith("trip-fork-")
    r = await c.post("/api/sessions/trip/fork", json={"id": "trip-b"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "session_exists"
    assert (await c.post("/api/sessions/nope/fork")).status_code == 404


async def test_export_is_the_cli_format_and_imports_back(keyed_api: Api, owner_data: Store) -> None:
    c = keyed_api.client
    r = await c.get("/api/sessions/trip/export")
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
    assert r.text == "".join(
        line + "\n" for line in export_sessions(owner_data, "default", ["trip"])
    )
    cli = run_cli("sessions", "export", "--session", "trip")
    assert cli.stdout == r.text

    r2 = await c.post(
        "/api/sessions/import", content=r.content, headers={"X-Hermes-User-Id": "carol"}
    )
    assert r2.status_code == 200 and r2.json() == {"imported": 1, "skipped": 0, "messages": 2}
    again = await c.post(
        "/api/sessions/import", content=r.content, headers={"X-Hermes-User-Id": "carol"}
    )
    assert again.json() == {"imported": 0, "skipped": 1, "messages": 0}
    copy = await c.get("/api/sessions/trip/messages", headers={"X-Hermes-User-Id": "carol"})
    assert [m["content"] for m in copy.json()["messages"]][0] == "Book a hotel in Lisbon"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"id": "ok", "messages": []}\nnot json\n', "line 2: not valid JSON"),
        (b'{"id": "bad id", "messages": []}\n', "line 1: id"),
        (b'{"id": "x", "messages": [{"role": "robot", "content": "hi"}]}\n', "line 1"),
        (b"\xff\xfe", "not UTF-8"),
        (b"\n\n", "no sessions"),
    ],
)
async def test_bad_import_is_400_and_imports_nothing(
    keyed_api: Api, owner_data: Store, body: bytes, says: str
) -> None:
    r = await keyed_api.client.post("/api/sessions/import", content=body)
    assert r.status_code == 400
    assert says in r.json()["error"]["message"]
    assert owner_data.get_session("default", "ok") is None


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/sessions/x", None),
        ("GET", "/api/sessions?limit=0", None),
        ("GET", "/api/sessions?limit=abc", None),
        ("PATCH", "/api/sessions/trip", {"title": "x", "color": "red"}),
        ("PATCH", "/api/sessions/trip", {"title": "x" * 201}),
        ("POST", "/api/sessions/trip/fork", {"id": "bad id"}),
        ("GET", "/api/sessions/bad%20id", None),
    ],
)
async def test_bad_input_is_4xx_with_the_error_envelope(
    keyed_api: Api, owner_data: Store, method: str, path: str, body: object
) -> None:
    r = await keyed_api.client.request(method, path, json=body)
    assert 400 <= r.status_code < 500
    error = r.json()["error"]
    assert error["message"] and error["code"]
    assert owner_data.get_session("default", "trip").title == "Lisbon trip"  # type: ignore[union-attr]


ROUTES = [
    ("GET", "/api/sessions", None),
    ("GET", "/api/sessions?q=zanzibar", None),
    ("GET", "/api/sessions/bob-1", None),
    ("PATCH", "/api/sessions/bob-1", {"title": "mine now"}),
    ("GET", "/api/sessions/bob-1/messages", None),
    ("POST", "/api/sessions/bob-1/fork", {"id": "stolen"}),
    ("GET", "/api/sessions/bob-1/export", None),
    ("DELETE", "/api/sessions/bob-1", None),
    ("POST", "/api/sessions/import", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
async def test_a_scoped_key_never_reaches_another_user(
    keyed_api: Api, owner_data: Store, method: str, path: str, body: object
) -> None:
    token, _ = create_key(owner_data, "alice")
    own = {"Authorization": f"Bearer {token}"}
    content = b'{"id": "bob-1", "messages": [{"role": "user", "content": "x"}]}\n'
    kwargs: dict[str, object] = {"json": body} if body is not None else {}
    if path.endswith("/import"):
        kwargs = {"content": content}
    # naming bob: refused outright
    r = await keyed_api.client.request(
        method, path, headers={**own, "X-Hermes-User-Id": "bob"}, **kwargs
    )
    assert r.status_code == 403 and r.json()["error"]["code"] == "user_scope_mismatch"
    # its own scope: never bob's data
    r = await keyed_api.client.request(method, path, headers=own, **kwargs)
    assert "zanzibar" not in r.text and "Bob secret" not in r.text
    if "bob-1" in path:
        assert r.status_code == 404
    bob = scope_for_user("bob")
    record = owner_data.get_session(bob, "bob-1")
    assert record is not None and record.title == "Bob secret"
    assert len(owner_data.get_messages(bob, "bob-1")) == 2
    # the admin may look at bob's data by naming him
    r = await keyed_api.client.get("/api/sessions/bob-1", headers={"X-Hermes-User-Id": "bob"})
    assert r.status_code == 200


async def test_in_the_openapi_document(keyed_api: Api) -> None:
    paths = keyed_api.app.openapi()["paths"]
    assert paths["/api/sessions"]["get"]["summary"] == "List or search sessions"
    assert "example" in json.dumps(paths["/api/sessions/import"]["post"])
    for path in ("/api/sessions/{session_id}/messages", "/api/sessions/{session_id}/fork"):
        assert path in paths
