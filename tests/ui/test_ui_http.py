"""The dashboard at the HTTP level: sign-in cookie, CSRF, scopes, headers, /api/me."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from hermes.auth.keys import create_key, revoke
from hermes.config.settings import Settings
from hermes.server import ui as ui_package
from hermes.server import ui_auth

from ..server.conftest import SERVER_KEY, Api, open_api


@pytest.fixture
async def ui(settings: Settings) -> AsyncIterator[Api]:
    settings.server.api_key = SecretStr(SERVER_KEY)
    async with open_api(settings) as a:
        yield a


async def _sign_in(client: httpx.AsyncClient, key: str) -> str:
    res = await client.post("/ui/login", json={"key": key})
    assert res.status_code == 200, res.text
    assert key not in res.headers.get("set-cookie", "")
    csrf: str = res.json()["csrf"]
    return csrf


async def test_every_ui_response_has_a_strict_csp(ui: Api) -> None:
    for path in ["/ui/", "/ui/static/app.css", "/ui/static/js/app.js", "/ui/nope", "/ui/session"]:
        res = await ui.client.get(path)
        csp = res.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, path
        assert "unsafe-inline" not in csp
        assert res.headers["x-content-type-options"] == "nosniff"
        assert res.headers["referrer-policy"] == "no-referrer"
    assert (
        (await ui.client.get("/ui/static/js/app.js"))
        .headers["content-type"]
        .startswith("text/javascript")
    )
    assert (await ui.client.get("/ui/static/../__init__.py")).status_code == 404


async def test_sign_in_sets_an_httponly_strict_cookie_that_is_not_the_key(ui: Api) -> None:
    res = await ui.client.post("/ui/login", json={"key": "wrong-key-wrong-key"})
    assert res.status_code == 401
    res = await ui.client.post("/ui/login", json={"key": SERVER_KEY})
    cookie = res.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert SERVER_KEY not in cookie
    assert res.json()["scope"] == "owner"
    assert (await ui.client.get("/health/detailed")).status_code == 200
    me = (await ui.client.get("/api/me")).json()
    assert me == {"scope": "default", "user": None, "admin": True}


async def test_form_sign_in_redirects_and_a_cross_site_one_is_refused(ui: Api) -> None:
    res = await ui.client.post("/ui/login", data={"key": SERVER_KEY})
    assert res.status_code == 303 and ui_auth.COOKIE in res.headers["set-cookie"]
    res = await ui.client.post(
        "/ui/login", data={"key": SERVER_KEY}, headers={"Origin": "https://evil.example"}
    )
    assert res.status_code == 403


async def test_a_cookie_alone_cannot_change_state(ui: Api) -> None:
    csrf = await _sign_in(ui.client, SERVER_KEY)
    body = {"action": "add", "target": "memory", "content": "likes tea"}
    res = await ui.client.post("/api/memory", json=body)
    assert res.status_code == 403
    assert res.json()["error"]["code"] == "csrf_token_invalid"
    res = await ui.client.post("/api/memory", json=body, headers={"X-CSRF-Token": "x" * 64})
    assert res.status_code == 403
    res = await ui.client.post("/api/memory", json=body, headers={"X-CSRF-Token": csrf})
    assert res.status_code == 200, res.text
    assert "likes tea" in str((await ui.client.get("/api/memory")).json())


async def test_sign_out_ends_the_sign_in(ui: Api) -> None:
    csrf = await _sign_in(ui.client, SERVER_KEY)
    cookie = ui.client.cookies[ui_auth.COOKIE]
    res = await ui.client.post("/ui/logout", headers={"X-CSRF-Token": csrf})
    assert res.status_code == 200
    ui.client.cookies.set(ui_auth.COOKIE, cookie)  # a copy kept by someone
    assert (await ui.client.get("/health/detailed")).status_code == 401
    assert (await ui.client.get("/ui/session")).status_code == 401


async def test_a_forged_or_idle_cookie_is_refused(ui: Api) -> None:
    await _sign_in(ui.client, SERVER_KEY)
    token = ui.client.cookies[ui_auth.COOKIE]
    body, _, mac = token.partition(".")
    ui.client.cookies.set(ui_auth.COOKIE, body + "." + mac[::-1])
    assert (await ui.client.get("/api/sessions")).status_code == 401


async def test_a_scoped_sign_in_is_its_user_only(ui: Api) -> None:
    key, record = create_key(ui.runtime.store, "alice")
    create_key(ui.runtime.store, "bob")
    csrf = await _sign_in(ui.client, key)
    session = (await ui.client.get("/ui/session")).json()
    assert session["scope"] == "user" and session["user"] == "alice"
    assert (await ui.client.get("/api/users")).status_code == 403
    res = await ui.client.get("/api/sessions", headers={"X-Hermes-User-Id": "bob"})
    assert res.status_code == 403
    assert (await ui.client.get("/api/me")).json()["scope"] == "user:alice"
    revoke(ui.runtime.store, record.id)
    ui_auth_cache = getattr(ui.app.state, "ui_key_cache", {})
    ui_auth_cache.clear()
    assert (await ui.client.get("/api/sessions")).status_code == 401
    assert csrf


async def test_forget_me_forgets_only_the_callers_user(ui: Api) -> None:
    key, _ = create_key(ui.runtime.store, "carol")
    csrf = await _sign_in(ui.client, key)
    add = {"action": "add", "target": "user", "content": "carol likes rust"}
    assert (
        await ui.client.post("/api/memory", json=add, headers={"X-CSRF-Token": csrf})
    ).is_success
    res = await ui.client.delete("/api/me", headers={"X-CSRF-Token": csrf})
    assert res.status_code == 200 and res.json()["forgotten"] == "carol"
    assert (await ui.client.get("/api/memory")).status_code == 401  # the key went too
    ui.client.cookies.clear()
    owner = {"Authorization": f"Bearer {SERVER_KEY}"}
    assert (await ui.client.delete("/api/me", headers=owner)).status_code == 403


async def test_open_server_signs_in_with_any_key(settings: Settings) -> None:
    async with open_api(settings) as a:
        res = await a.client.post("/ui/login", json={"key": "anything"})
        assert res.status_code == 200 and res.json()["open"] is True
        assert (await a.client.post("/api/memory", json={})).status_code == 403


async def test_the_cookie_is_secure_over_tls_and_a_key_in_the_url_signs_nobody_in(
    ui: Api,
) -> None:
    transport = httpx.ASGITransport(ui.app)
    async with httpx.AsyncClient(transport=transport, base_url="https://hermes.test") as tls:
        cookie = (await tls.post("/ui/login", json={"key": SERVER_KEY})).headers["set-cookie"]
        assert "secure" in cookie.lower() and "httponly" in cookie.lower()
    plain = (await ui.client.post("/ui/login", json={"key": SERVER_KEY})).headers["set-cookie"]
    assert "secure" not in plain.lower()  # plain loopback HTTP: a Secure cookie would be lost
    for proxied, secure in [  # TLS ended by a reverse proxy that says so (README's nginx)
        ({"X-Forwarded-Proto": "https"}, True),
        ({"X-Forwarded-Proto": "https, http"}, True),
        ({"Forwarded": 'for=192.0.2.7;proto="https", for=10.0.0.2'}, True),
        ({"X-Forwarded-Proto": "http"}, False),
        ({"Forwarded": "for=192.0.2.7;proto=http"}, False),
    ]:
        res = await ui.client.post("/ui/login", json={"key": SERVER_KEY}, headers=proxied)
        assert ("secure" in res.headers["set-cookie"].lower()) is secure, proxied
        csrf = res.json()["csrf"]
        res = await ui.client.post("/ui/logout", headers={**proxied, "X-CSRF-Token": csrf})
        assert ("secure" in res.headers["set-cookie"].lower()) is secure, proxied
    ui.client.cookies.clear()
    for path in [f"/ui/?key={SERVER_KEY}", f"/ui/session?key={SERVER_KEY}"]:
        res = await ui.client.get(path)
        assert "set-cookie" not in res.headers, path
    assert (await ui.client.get(f"/ui/session?key={SERVER_KEY}")).status_code == 401
    res = await ui.client.post(f"/ui/login?key={SERVER_KEY}")
    assert res.status_code == 400 and "set-cookie" not in res.headers
    assert (await ui.client.get(f"/api/sessions?api_key={SERVER_KEY}")).status_code == 401


async def test_a_reload_revalidates_each_file_without_sending_it_again(ui: Api) -> None:
    for path in ["/ui/", "/ui/static/js/app.js"]:
        first = await ui.client.get(path)
        assert first.status_code == 200 and first.content
        assert first.headers["cache-control"] == "no-cache"
        again = await ui.client.get(path, headers={"If-None-Match": first.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        assert "default-src 'self'" in again.headers["content-security-policy"]
        stale = await ui.client.get(path, headers={"If-None-Match": '"0-0"'})
        assert stale.status_code == 200 and stale.content == first.content


async def test_the_page_names_its_files_by_content_so_a_load_fetches_none_again(ui: Api) -> None:
    """Every file the page names sits under one tagged folder and may be kept for a year
    (its bytes never change under that name); relative module imports land there too, and
    a page from before an upgrade (another tag) still gets its files, revalidated."""
    page = (await ui.client.get("/ui/")).text
    named = re.findall(r'(?:href|src)="(/ui/static/[^"]+)"', page)
    assert len(named) > 10
    tags = {path.split("/")[3] for path in named}
    assert len(tags) == 1 and next(iter(tags)).startswith("v-"), tags
    for path in named:
        got = await ui.client.get(path)
        assert got.status_code == 200, path
        assert got.headers["cache-control"] == "public, max-age=31536000, immutable", path
    app = next(path for path in named if path.endswith("/js/app.js"))
    imported = app.replace("/js/app.js", "/js/screens/chat.js")  # a relative import's URL
    assert (await ui.client.get(imported)).headers["cache-control"].endswith("immutable")
    old = await ui.client.get("/ui/static/v-000000000000/js/app.js")
    assert old.status_code == 200 and old.headers["cache-control"] == "no-cache"
    assert (await ui.client.get("/ui/static/v-x/../../__init__.py")).status_code == 404


async def test_every_preloaded_module_is_served(ui: Api) -> None:
    page = (await ui.client.get("/ui/")).text
    preloaded = re.findall(r'<link rel="modulepreload" href="([^"]+)">', page)
    assert len(preloaded) > 10
    for href in preloaded:
        res = await ui.client.get(href)
        assert res.status_code == 200 and res.headers["content-type"].startswith("text/javascript")


async def test_no_file_refers_to_another_origin(ui: Api) -> None:
    """Offline: no font, script, style or picture from elsewhere (the CSP would refuse it
    anyway; this says which file tried). The SVG namespace is a name, never fetched."""
    static = Path(ui_package.__file__).parent / "static"
    files = [p for p in static.rglob("*") if p.is_file()]
    assert len(files) > 15
    for path in files:
        text = path.read_text(encoding="utf-8").replace("http://www.w3.org/2000/svg", "")
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), path
        assert "@import" not in text and "@font-face" not in text, path


async def test_every_state_changing_route_needs_the_csrf_token(ui: Api) -> None:
    """CSRF on every change: each POST/PUT/PATCH/DELETE in the API document (and the turn
    routes kept out of it) refuses the sign-in cookie without its X-CSRF-Token."""
    await _sign_in(ui.client, SERVER_KEY)
    changes = [("POST", "/v1/chat/completions"), ("POST", "/ui/logout")]
    for path, operations in ui.app.openapi()["paths"].items():
        for method in operations:
            if method in ("post", "put", "patch", "delete"):
                changes.append((method.upper(), re.sub(r"\{[^}]+\}", "x1", path)))
    assert len(changes) > 25
    for method, path in changes:
        res = await ui.client.request(method, path, json={})
        assert res.status_code == 403, (method, path, res.text)
        assert res.json()["error"]["code"] == "csrf_token_invalid", (method, path)
