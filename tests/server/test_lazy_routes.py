"""Most parts' routes are built on the first request under their paths (cold start, issue #44):
before that they answer, are routed in the same order and are in /openapi.json as when they
were built with the app."""

from __future__ import annotations

from typing import Any

from hermes.config.settings import Settings

from .conftest import AUTH, Api, open_api


def _concrete(path: str) -> str:
    return "/".join("x" if part.startswith("{") else part for part in path.split("/"))


async def _routing(api: Api, paths: list[str]) -> dict[str, tuple[int, str]]:
    """For each path, what an OPTIONS request finds: the route's 405 and its Allow header,
    or the router's 404 when no route is there."""
    found: dict[str, tuple[int, str]] = {}
    for path in paths:
        r = await api.client.options(_concrete(path), headers=AUTH)
        found[path] = (r.status_code, r.headers.get("allow", ""))
    return found


async def test_routes_not_built_yet_are_routed_as_built_ones(keyed_settings: Settings) -> None:
    async with open_api(keyed_settings) as built:
        built.client.headers.update(AUTH)
        document: dict[str, Any] = (await built.client.get("/openapi.json")).json()
        paths = list(document["paths"])
        expected = await _routing(built, paths)
    assert {"/api/keys", "/api/jobs/{job_id}/runs", "/api/sessions/{session_id}/chat"} <= set(paths)
    assert all(status == 405 for status, _ in expected.values()), expected
    # the chat route of a session, not the session route in front of which it was declared
    assert expected["/api/sessions/{session_id}/chat"] == (405, "POST")

    async with open_api(keyed_settings) as fresh:  # a new app: nothing built but the core
        assert await _routing(fresh, paths) == expected


async def test_a_part_answers_its_first_request_and_is_documented_before(
    keyed_api: Api,
) -> None:
    document = (await keyed_api.client.get("/openapi.json")).json()
    assert {"get", "post"} <= set(document["paths"]["/api/keys"])
    assert "get" in document["paths"]["/api/me"]

    async with open_api(keyed_api.runtime.settings) as fresh:
        fresh.client.headers.update(AUTH)
        r = await fresh.client.get("/api/keys")
        assert r.status_code == 200, r.text
        assert "keys" in r.json()
        r = await fresh.client.get("/api/nothing-here")
        assert r.status_code == 404
