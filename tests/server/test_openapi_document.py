"""SPEC §13: the management and runs routes are in the OpenAPI document, and a client can
fetch it over HTTP (`/openapi.json`, as README's management API section says)."""

from __future__ import annotations

from .conftest import SERVER_KEY, Api

SPEC_ROUTES = {
    "/v1/models": {"get"},
    "/v1/runs": {"post"},
    "/v1/runs/{run_id}": {"get"},
    "/v1/runs/{run_id}/events": {"get"},
    "/api/jobs": {"get", "post"},
    "/api/sessions": {"get"},
    "/api/sessions/{session_id}/fork": {"post"},
    "/api/memory": {"get", "post"},
    "/api/memory/history": {"get"},
    "/api/users": {"get"},
    "/api/skills": {"get"},
    "/api/toolsets": {"get"},
    "/api/usage": {"get"},
    "/v1/capabilities": {"get"},
}


async def test_the_openapi_document_is_served(keyed_api: Api) -> None:
    r = await keyed_api.client.get("/openapi.json")
    assert r.status_code == 200, r.text
    document = r.json()
    assert document["openapi"].startswith("3.")
    for path, methods in SPEC_ROUTES.items():
        assert path in document["paths"], path
        assert methods <= set(document["paths"][path]), path


async def test_it_names_routes_not_data(keyed_api: Api) -> None:
    r = await keyed_api.client.get("/openapi.json", headers={"Authorization": ""})
    assert r.status_code == 200
    assert str(keyed_api.runtime.settings.home) not in r.text
    assert SERVER_KEY not in r.text
