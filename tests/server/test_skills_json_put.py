"""`PUT /api/skills/{name}` with JSON `{"content"}` (the dashboard's editor), on both backends:
the same skill as the text/markdown body makes; a JSON body without `content` is a 400."""

from __future__ import annotations

import pytest

from .conftest import Api
from .test_skills_api import SKILL

pytestmark = pytest.mark.usefixtures("on_each_backend")


async def test_json_content_creates_and_replaces(keyed_api: Api) -> None:
    c = keyed_api.client
    r = await c.put("/api/skills/pack-list?category=travel", json={"content": SKILL})
    assert r.status_code == 201, r.text
    assert r.json()["skill"]["content"] == SKILL
    changed = SKILL.replace("chargers", "chargers, adapters")
    r = await c.put("/api/skills/pack-list", json={"content": changed})
    assert r.status_code == 200 and r.json()["skill"]["content"] == changed


@pytest.mark.parametrize("body", [{"text": SKILL}, {"content": 7}, ["x"]])
async def test_json_without_content_is_refused(keyed_api: Api, body: object) -> None:
    r = await keyed_api.client.put("/api/skills/pack-list", json=body)
    assert r.status_code == 400 and r.json()["error"]["param"] == "content"
    listed = (await keyed_api.client.get("/api/skills")).json()["skills"]
    assert "pack-list" not in [s["name"] for s in listed]
