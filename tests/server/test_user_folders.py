"""SPEC §3: an end user's notes live in `users/<scope>/memories/` under HERMES_HOME, named by the
user id the client sent; ids that are not safe file names, and folders made by an earlier
version (slug plus hash), still work."""

from __future__ import annotations

import hashlib

from .conftest import Api


async def _remember(api: Api, user: str, content: str) -> None:
    r = await api.client.post(
        "/api/memory",
        json={"action": "add", "target": "user", "content": content},
        headers={"X-Hermes-User-Id": user},
    )
    assert r.status_code == 200, r.text


async def test_a_users_notes_are_in_users_named_by_the_id(keyed_api: Api) -> None:
    home = keyed_api.runtime.settings.home
    await _remember(keyed_api, "alice", "Alice likes tea")

    notes = home / "users" / "alice" / "memories" / "USER.md"
    assert notes.is_file()
    assert "Alice likes tea" in notes.read_text(encoding="utf-8")


async def test_ids_that_are_not_safe_file_names_get_a_folder_of_their_own(
    keyed_api: Api,
) -> None:
    home = keyed_api.runtime.settings.home
    await _remember(keyed_api, "Alice", "upper")
    await _remember(keyed_api, "team:7", "colon")
    await _remember(keyed_api, "repo/x", "slash")

    folders = sorted(p.name for p in (home / "users").iterdir())
    assert len(folders) == 3
    assert "Alice" not in folders  # would share `alice`'s folder where names ignore case
    assert all("/" not in name and ":" not in name for name in folders)
    r = await keyed_api.client.get("/api/memory", headers={"X-Hermes-User-Id": "Alice"})
    assert r.json()["user"]["entries"] == ["upper"]


async def test_an_id_cannot_take_a_hashed_folder_of_another_user(keyed_api: Api) -> None:
    home = keyed_api.runtime.settings.home
    await _remember(keyed_api, "Bob", "Bob's secret")
    [hashed] = [p.name for p in (home / "users").iterdir()]

    r = await keyed_api.client.get("/api/memory", headers={"X-Hermes-User-Id": hashed.lower()})
    assert r.json()["user"]["entries"] == []
    r = await keyed_api.client.get("/api/memory", headers={"X-Hermes-User-Id": hashed})
    assert r.json()["user"]["entries"] == []


async def test_a_folder_from_an_earlier_version_is_still_read(keyed_api: Api) -> None:
    home = keyed_api.runtime.settings.home
    digest = hashlib.sha256(b"user:carol").hexdigest()[:12]
    legacy = home / "users" / f"carol-{digest}"  # the slug-plus-hash folder an upgrade finds
    (legacy / "memories").mkdir(parents=True)
    (legacy / "memories" / "USER.md").write_text("Carol plays chess\n", encoding="utf-8")

    r = await keyed_api.client.get("/api/memory", headers={"X-Hermes-User-Id": "carol"})
    assert r.json()["user"]["entries"] == ["Carol plays chess"]
    assert not (home / "users" / "carol").exists()

    r = await keyed_api.client.delete("/api/users/carol")
    assert r.status_code == 200, r.text
    assert not legacy.exists()
