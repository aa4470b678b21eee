"""Cost per user, model and day (issue 43): `GET /api/usage` and `hermes usage`, on both
store backends, from turns the fake model answers with known token counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes.auth.keys import create_key
from hermes.config.settings import PricingSettings, Settings
from hermes.testing.fake_model import FakeModel, Text

from ..conftest import run_cli
from ..server.conftest import AUTH, Api, open_api

pytestmark = pytest.mark.usefixtures("on_each_backend")

ALICE = {**AUTH, "X-Hermes-User-Id": "alice"}


async def _two_users(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("owner answer", prompt_tokens=100, completion_tokens=10))
    fake.enqueue(Text("alice answer", prompt_tokens=1000, completion_tokens=50))
    assert (await api.chat("hi", headers=AUTH)).status_code == 200
    assert (await api.chat("hi", headers=ALICE)).status_code == 200


async def test_owner_sees_every_user_with_cost(keyed_settings: Settings, fake: FakeModel) -> None:
    keyed_settings.model.pricing = PricingSettings(input=1.0, output=2.0)
    async with open_api(keyed_settings) as api:
        await _two_users(api, fake)
        r = await api.client.get("/api/usage", headers=AUTH)
    assert r.status_code == 200
    body = r.json()
    by_user = {row["user"]: row for row in body["usage"]}
    assert set(by_user) == {None, "alice"}  # None: the owner's own turns
    alice = by_user["alice"]
    assert (alice["model"], alice["prompt_tokens"], alice["completion_tokens"]) == (
        "fake-model",
        1000,
        50,
    )
    assert alice["cost_usd"] == pytest.approx((1000 * 1.0 + 50 * 2.0) / 1e6)
    assert alice["day"] == body["to"]
    assert body["totals"]["prompt_tokens"] == 1100
    assert body["totals"]["cost_usd"] == pytest.approx((1100 + 60 * 2.0) / 1e6)
    assert body["totals"]["unpriced_models"] == []


async def test_a_user_sees_only_their_own(keyed_settings: Settings, fake: FakeModel) -> None:
    async with open_api(keyed_settings) as api:
        await _two_users(api, fake)
        token, _ = create_key(api.runtime.store, "alice")
        scoped = {"Authorization": f"Bearer {token}"}
        mine = (await api.client.get("/api/usage", headers=scoped)).json()
        named = (await api.client.get("/api/usage", headers=ALICE)).json()
        other = await api.client.get("/api/usage?user=bob", headers=scoped)
        narrowed = (await api.client.get("/api/usage?user=alice", headers=AUTH)).json()
    assert [row["user"] for row in mine["usage"]] == ["alice"]
    assert mine["usage"] == named["usage"] == narrowed["usage"]
    assert mine["totals"]["cost_usd"] is None  # no price configured: no guess
    assert mine["totals"]["unpriced_models"] == ["fake-model"]
    assert other.status_code == 403
    assert other.json()["error"]["code"] == "admin_only"


async def test_group_by_and_refusals(keyed_settings: Settings, fake: FakeModel) -> None:
    async with open_api(keyed_settings) as api:
        await _two_users(api, fake)
        get = api.client.get
        by_model = (await get("/api/usage?group_by=model", headers=AUTH)).json()
        long_ago = (await get("/api/usage?from=2001-01-01&to=2001-01-31", headers=AUTH)).json()
        bad_group = await get("/api/usage?group_by=day,colour", headers=AUTH)
        bad_date = await get("/api/usage?from=yesterday", headers=AUTH)
        backwards = await get("/api/usage?from=2026-02-01&to=2026-01-01", headers=AUTH)
        anonymous = await get("/api/usage")
    assert by_model["usage"] == [
        {
            "model": "fake-model",
            "prompt_tokens": 1100,
            "completion_tokens": 60,
            "total_tokens": 1160,
            "calls": 2,
            "cost_usd": None,
        }
    ]
    assert long_ago["usage"] == [] and long_ago["totals"]["prompt_tokens"] == 0
    for r, param in ((bad_group, "group_by"), (bad_date, "from"), (backwards, "from")):
        assert r.status_code == 400
        error = r.json()["error"]
        assert error["param"] == param and error["type"] == "invalid_request_error"
    assert anonymous.status_code == 401


async def test_forgetting_a_user_forgets_their_usage(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    async with open_api(keyed_settings) as api:
        await _two_users(api, fake)
        await api.client.get("/api/usage", headers=AUTH)  # flushes the buffered records
        assert (await api.client.delete("/api/users/alice", headers=AUTH)).status_code == 200
        body = (await api.client.get("/api/usage", headers=AUTH)).json()
    assert [row["user"] for row in body["usage"]] == [None]


async def test_hermes_usage_cli(keyed_settings: Settings, fake: FakeModel, home: Path) -> None:
    async with open_api(keyed_settings) as api:
        await _two_users(api, fake)
    # the app's shutdown wrote the buffered records; the CLI reads them from the store
    (home / "config.yaml").write_text("model:\n  pricing: {input: 3, output: 6}\n")
    everyone = run_cli("usage", "--json")
    alice = run_cli("usage", "--json", "--user", "alice", "--days", "1")
    table = run_cli("usage")
    assert everyone.returncode == alice.returncode == table.returncode == 0, everyone.stderr
    rows = json.loads(everyone.stdout)["usage"]
    assert sorted((r["user"] or "", r["prompt_tokens"]) for r in rows) == [
        ("", 100),
        ("alice", 1000),
    ]
    [row] = json.loads(alice.stdout)["usage"]
    assert row["cost_usd"] == pytest.approx((1000 * 3 + 50 * 6) / 1e6)
    assert "(owner)" in table.stdout and "alice" in table.stdout and "$" in table.stdout


async def test_a_timed_write_and_a_flush_both_end(tmp_path: Path) -> None:
    """The write the timer starts ends, and a flush (shutdown) after it ends too: a timed
    write that waited for itself once kept `hermes serve` from exiting on SIGTERM."""
    import asyncio
    import time

    from hermes.observability.usage import UsageRecorder
    from hermes.store.base import UsageRecord
    from hermes.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "state.db")
    try:
        recorder = UsageRecorder(store, delay=0.01)
        assert store.usage is not None

        def written() -> int:
            assert store.usage is not None
            rows = store.usage.usage_totals(since=0.0, until=time.time() + 60)
            return sum(r.prompt_tokens for r in rows)

        recorder.add([UsageRecord("default", "m", "2026-11-25", time.time(), 10, 2)])
        deadline = time.monotonic() + 10
        while written() < 10:  # the timer's write
            assert time.monotonic() < deadline, "the timed write never came"
            await asyncio.sleep(0.01)
        recorder.add([UsageRecord("default", "m", "2026-11-25", time.time(), 5, 1)])
        await asyncio.wait_for(recorder.flush(), timeout=10)  # the shutdown's
        assert written() == 15
    finally:
        store.close()
