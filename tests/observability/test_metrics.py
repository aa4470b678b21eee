"""`/metrics` completes (issue 43): each test drives the behaviour, then reads the scrape.

Counters kept per process (recalls, provider latency, runs, approvals) are compared before
and after, since other tests in the same process add to them too."""

from __future__ import annotations

import re

from hermes.agent.memory_providers import MemoryLayers, MemoryProvider
from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

from ..server.conftest import AUTH, Api, open_api
from ..server.test_runs import dangerous_script, junk, start, wait_status

FINAL = {"completed", "failed", "cancelled"}


async def scrape(api: Api) -> str:
    r = await api.client.get("/metrics", headers=AUTH)
    assert r.status_code == 200, r.text
    return r.text


def value(text: str, sample: str) -> float:
    """The value of one sample line (`name{labels}`), 0 when it is not there yet."""
    match = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


async def test_recall_latency(keyed_settings: Settings, fake: FakeModel) -> None:
    fake.enqueue(Text("The launch code word is marmalade."))
    fake.enqueue(ToolCalls([("session_search", {"query": "marmalade"})]), Text("found it"))
    sample = 'hermes_recall_seconds_count{outcome="ok"}'
    async with open_api(keyed_settings) as api:
        before = value(await scrape(api), sample)
        await api.chat("remember marmalade", headers={**AUTH, "X-Hermes-Session-Id": "a"})
        r = await api.chat("what was the word?", headers={**AUTH, "X-Hermes-Session-Id": "b"})
        assert r.status_code == 200
        text = await scrape(api)
    assert value(text, sample) == before + 1
    assert value(text, 'hermes_recall_seconds_bucket{le="+Inf",outcome="ok"}') >= before + 1
    assert "# TYPE hermes_recall_seconds histogram" in text


class _SlowThenBroken(MemoryProvider):
    """A provider whose first prefetch answers and second fails."""

    name = "probe"

    def __init__(self) -> None:
        self.calls = 0

    async def prefetch(self, scope: str, session_id: str, user_message: str) -> str | None:
        self.calls += 1
        if self.calls > 1:
            raise ConnectionError("provider down")
        return "the user likes tea"


async def test_memory_provider_latency(keyed_settings: Settings, fake: FakeModel) -> None:
    fake.default = Text("ok")
    ok = 'hermes_memory_provider_seconds_count{outcome="ok",provider="probe"}'
    failed = 'hermes_memory_provider_seconds_count{outcome="error",provider="probe"}'
    async with open_api(keyed_settings) as api:
        api.runtime.agent.memory = MemoryLayers([_SlowThenBroken()])
        text = await scrape(api)
        before = value(text, ok), value(text, failed)
        assert (await api.chat("one", headers=AUTH)).status_code == 200
        assert (await api.chat("two", headers=AUTH)).status_code == 200
        text = await scrape(api)
    assert (value(text, ok), value(text, failed)) == (before[0] + 1, before[1] + 1)
    assert value(text, 'hermes_memory_provider_seconds_sum{outcome="ok",provider="probe"}') > 0


async def test_runs_and_approvals(keyed_settings: Settings, fake: FakeModel) -> None:
    junk(keyed_settings)
    completed = 'hermes_runs_total{status="completed"}'
    denied = 'hermes_approvals_total{answer="deny"}'
    async with open_api(keyed_settings) as api:
        text = await scrape(api)
        before = value(text, completed), value(text, denied)
        dangerous_script(fake)
        run_id = await start(api, AUTH, input="clean up")
        await wait_status(api, run_id, {"waiting_for_approval"}, headers=AUTH)
        answer = {"choice": "deny"}
        r = await api.client.post(f"/v1/runs/{run_id}/approval", json=answer, headers=AUTH)
        assert r.status_code == 200
        assert (await wait_status(api, run_id, FINAL, headers=AUTH))["status"] == "completed"
        text = await scrape(api)
    assert (value(text, completed), value(text, denied)) == (before[0] + 1, before[1] + 1)


async def test_turn_tokens_compressions_and_model_errors_are_exported(
    keyed_settings: Settings, fake: FakeModel
) -> None:
    """The metrics that were there before stay: a turn's tokens, compressions, fallbacks."""
    fake.enqueue(Text("hello", prompt_tokens=40, completion_tokens=7))
    async with open_api(keyed_settings) as api:
        await api.chat("hi", headers=AUTH)
        await api.runtime.agent.drain()
        text = await scrape(api)
    assert value(text, 'hermes_tokens_total{kind="prompt"}') == 40
    assert value(text, 'hermes_turns_total{source="api"}') == 1
    assert "hermes_compressions_total 0.0" in text
    assert "hermes_compression_fallbacks_total 0.0" in text


async def test_requests_are_counted_by_route_template(keyed_settings: Settings) -> None:
    """One series per route template, never per raw path; the first request of a route
    scans the routes, later ones ask the route the router chose (the same answer)."""
    async with open_api(keyed_settings) as api:
        for sid in ("one", "two", "one"):
            assert (await api.client.get(f"/api/sessions/{sid}", headers=AUTH)).status_code == 404
        assert (await api.client.get("/no/such/path", headers=AUTH)).status_code == 404
        text = await scrape(api)
    route = "/api/sessions/{session_id:path}"
    assert (
        value(text, f'hermes_http_requests_total{{method="GET",route="{route}",status="404"}}') == 3
    )
    assert (
        value(text, 'hermes_http_requests_total{method="GET",route="unmatched",status="404"}') == 1
    )
    assert "/api/sessions/one" not in text and "/no/such/path" not in text
