"""Scoped API keys, quotas and /metrics over the real HTTP API and CLI."""

from __future__ import annotations

import json

import pytest

from hermes.auth.keys import create_key, revoke
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Text
from tests.conftest import run_cli
from tests.server.conftest import AUTH, open_api


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_scoped_key_acts_as_its_user_only(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    async with open_api(keyed_settings) as api:
        token, record = create_key(api.runtime.store, "alice")
        alice = _bearer(token)
        r = await api.chat("hi", headers={**alice, "X-Hermes-Session-Id": "s"})
        assert r.status_code == 200, r.text
        assert [m.content for m in api.runtime.store.get_messages("user:alice", "s")] == [
            "hi",
            "ok",
        ]
        assert api.runtime.store.get_messages("default", "s") == []
        own = await api.chat("hi", headers={**alice, "X-Hermes-User-Id": "alice"})
        assert own.status_code == 200
        other = await api.chat("hi", headers={**alice, "X-Hermes-User-Id": "bob"})
        assert other.status_code == 403 and other.json()["error"]["code"] == "user_scope_mismatch"
        job = await api.client.post(
            "/api/jobs", headers=alice, json={"name": "n", "schedule": "every 1h", "prompt": "p"}
        )
        assert job.status_code == 201
        admin_jobs = (await api.client.get("/api/jobs", headers=AUTH)).json()["jobs"]
        assert admin_jobs == []  # the job lives in alice's scope, not the owner's
        metrics = await api.client.get("/metrics", headers=alice)
        assert metrics.status_code == 403
        assert revoke(api.runtime.store, record.id)
        api.app.state.scoped_key_cache = {}
        gone = await api.chat("hi", headers=alice)
        assert gone.status_code == 401
        forged = await api.chat("hi", headers=_bearer(token[:-2] + "xx"))
        assert forged.status_code == 401


async def test_an_expired_key_is_refused(keyed_settings: Settings) -> None:
    async with open_api(keyed_settings) as api:
        token, _ = create_key(api.runtime.store, "carol", expires_in=-1)
        r = await api.client.get("/v1/models", headers=_bearer(token))
        assert r.status_code == 401


def test_keys_cli_create_list_revoke(home: object) -> None:
    created = run_cli("keys", "create", "--user", "dave", "--expires", "30d", "--json")
    assert created.returncode == 0, created.stderr
    info = json.loads(created.stdout)
    assert info["key"].startswith("hk_") and info["user"] == "dave" and info["expires_at"]
    listed = run_cli("keys", "list", "--json")
    entries = json.loads(listed.stdout)
    assert [e["id"] for e in entries] == [info["id"]]
    assert info["key"] not in listed.stdout  # secrets are never listed
    assert run_cli("keys", "revoke", info["id"]).returncode == 0
    assert json.loads(run_cli("keys", "list", "--json").stdout)[0]["revoked"] is True
    again = run_cli("keys", "revoke", info["id"])
    assert again.returncode == 1
    bad = run_cli("keys", "create", "--user", "eve", "--expires", "soon")
    assert bad.returncode == 2 and "--expires" in bad.stderr


async def test_quotas_per_key_and_user_answer_429_with_retry_after(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    keyed_settings.quotas.requests_per_minute = 3
    keyed_settings.quotas.turns_per_day = 2
    async with open_api(keyed_settings) as api:
        token, _ = create_key(api.runtime.store, "frank")
        frank = _bearer(token)
        assert (await api.chat("1", headers=frank)).status_code == 200
        assert (await api.chat("2", headers=frank)).status_code == 200
        third = await api.chat("3", headers=frank)
        assert third.status_code == 429 and int(third.headers["retry-after"]) > 0
        assert third.json()["error"]["code"] == "rate_limit_exceeded"
        # a second key for the same user shares the user's limit
        token2, _ = create_key(api.runtime.store, "frank")
        assert (await api.chat("4", headers=_bearer(token2))).status_code == 429
        # the owner is exempt by default
        for _ in range(5):
            assert (await api.client.get("/v1/models", headers=AUTH)).status_code == 200
        metrics = await api.client.get("/metrics", headers=AUTH)
        assert "hermes_quota_refusals 2.0" in metrics.text


async def test_metrics_count_requests_turns_tokens_and_model_errors(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    fake.enqueue(Text("ok", prompt_tokens=7, completion_tokens=3))
    async with open_api(keyed_settings) as api:
        assert (await api.client.get("/metrics")).status_code == 401
        assert (await api.chat("hi", headers=AUTH)).status_code == 200
        assert (await api.chat("boom", headers=AUTH)).status_code >= 500  # script exhausted
        text = (await api.client.get("/metrics", headers=AUTH)).text
    assert (
        'hermes_http_requests_total{method="POST",route="/v1/chat/completions",status="200"} 1.0'
        in text
    )
    assert 'hermes_turns_total{source="api"} 1.0' in text
    assert 'hermes_tokens_total{kind="prompt"} 7.0' in text
    assert "hermes_model_errors_total" in text
    assert "hermes_http_request_duration_seconds_bucket" in text
    assert "hermes_leases_held 0.0" in text


@pytest.mark.usefixtures("model_env")
async def test_health_reports_every_part(keyed_settings: Settings) -> None:
    async with open_api(keyed_settings) as api:
        body = (await api.client.get("/health/detailed", headers=AUTH)).json()
    assert body["status"] == "ok"
    assert {"disk", "notes"} <= set(body["parts"])
