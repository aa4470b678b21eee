"""A scope is the provider's user: `X-Hermes-User-Id: 42` is the Honcho peer `user-42`, the
owner is `owner`, and forgetting user 42 over the management API deletes that peer's memory
at the provider, nobody else's. Driven through the HTTP API, the path end users take."""

from __future__ import annotations

from pydantic import SecretStr

from hermes.memory.providers.identity import provider_user
from hermes.testing.fake_model import FakeModel, Text
from tests.memory.providers.conftest import make_settings, settle
from tests.memory.providers.honcho_api import HonchoAPI
from tests.server.conftest import AUTH, SERVER_KEY, chat_body, open_api


def test_end_users_are_named_by_their_id_and_never_collide() -> None:
    assert provider_user("default") == "owner"
    assert provider_user("user:42") == "user-42"
    assert provider_user("user:alice-b") == "user-alice-b"
    odd = ["user:a.b", "user:a_2eb", "user:a:b", "user:a/b", "user:owner", "user:", "owner"]
    assert len({provider_user(s) for s in [*odd, "default"]}) == len(odd) + 1


async def test_user_42_is_the_honcho_peer_user_42_and_forgetting_them_deletes_it(
    honcho: HonchoAPI, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    settings = make_settings()
    settings.server.api_key = SecretStr(SERVER_KEY)  # per-user scopes need a server key
    async with open_api(settings) as api:
        api.client.headers.update(AUTH)
        for who, session in ((None, "own"), ("42", "s-42"), ("7", "s-7")):
            headers = {"X-Hermes-Session-Id": session}
            if who is not None:
                headers["X-Hermes-User-Id"] = who
            r = await api.client.post(
                "/v1/chat/completions", json=chat_body(f"hello from {who}"), headers=headers
            )
            assert r.status_code == 200, r.text
        await settle(api.runtime)
        assert {"owner", "user-42", "user-7"} <= set(honcho.peers)
        assert {"owner--own", "user-42--s-42", "user-7--s-7"} <= set(honcho.sessions)
        assert honcho.sessions["user-42--s-42"]["peers"] == {"user-42", "hermes"}

        forgotten = await api.client.delete("/api/users/42")

        assert forgotten.status_code == 200, forgotten.text
        assert forgotten.json()["provider_memory"] >= 1
        assert not [s for s in honcho.sessions if s.startswith("user-42--")]
        assert {"owner--own", "user-7--s-7"} <= set(honcho.sessions)
        assert all(c["observed_id"] != "user-42" for c in honcho.conclusions)


async def test_a_provider_that_fails_to_forget_is_a_502_sentence_and_a_retry_finishes(
    honcho: HonchoAPI, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    settings = make_settings()
    settings.server.api_key = SecretStr(SERVER_KEY)
    async with open_api(settings) as api:
        api.client.headers.update(AUTH)
        r = await api.client.post(
            "/v1/chat/completions", json=chat_body("hi"), headers={"X-Hermes-User-Id": "42"}
        )
        assert r.status_code == 200, r.text
        await settle(api.runtime)
        honcho.mode = "garbage"

        failed = await api.client.delete("/api/users/42")

        assert failed.status_code == 502, failed.text
        error = failed.json()["error"]
        assert error["code"] == "provider_error"
        assert error["message"].startswith("honcho did not delete what it keeps of this user")
        assert "forget the user again once honcho answers" in error["message"]
        assert api.runtime.store.list_sessions("user:42") == []  # the rest went
        assert [s for s in honcho.sessions if s.startswith("user-42--")]

        honcho.mode = "ok"
        again = await api.client.delete("/api/users/42")
        assert again.status_code == 200, again.text
        assert again.json()["provider_memory"] >= 1
        assert not [s for s in honcho.sessions if s.startswith("user-42--")]
