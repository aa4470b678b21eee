"""The model part of `/health/detailed` (the dashboard's Status): configured is not enough,
an endpoint whose latest call failed is `degraded` with the fix for that kind of failure,
and its error text (which may name hosts or echo keys) is never shown."""

from __future__ import annotations

from typing import Any

from hermes.models.errors import ModelAuthError, ModelUnreachableError
from hermes.models.outcome import ModelCalls
from hermes.testing.fake_model import Error, FakeModel, Text

from .conftest import Api

CHAT = {"model": "hermes", "messages": [{"role": "user", "content": "hi"}]}


async def model_part(api: Api) -> dict[str, Any]:
    part: dict[str, Any] = (await api.client.get("/health/detailed")).json()["parts"]["model"]
    return part


async def test_a_failing_endpoint_degrades_the_model_until_it_answers(
    api: Api, fake: FakeModel
) -> None:
    assert (await model_part(api))["detail"] == "no model call yet"
    fake.enqueue(Error(500, "boom from 10.9.8.7 with sk-secret"))
    assert (await api.client.post("/v1/chat/completions", json=CHAT)).status_code >= 500
    body = (await api.client.get("/health/detailed")).json()
    part = body["parts"]["model"]
    assert body["status"] == "degraded" and part["status"] == "degraded", part
    assert "the last model call failed" in part["reason"] and "HTTP 500" in part["reason"]
    assert "10.9.8.7" not in str(body) and "sk-secret" not in str(body)
    assert "model" in body["reasons"] and part["fix"]
    fake.enqueue(Text("back again"))
    assert (await api.client.post("/v1/chat/completions", json=CHAT)).status_code == 200
    part = await model_part(api)
    assert part["status"] == "ok" and part["detail"].startswith("last answered"), part


async def test_a_refused_key_names_its_fix(api: Api, fake: FakeModel) -> None:
    fake.enqueue(Error(401, "invalid api key"))
    assert (await api.client.post("/v1/chat/completions", json=CHAT)).status_code == 502
    part = await model_part(api)
    assert part["status"] == "degraded" and "Auth, HTTP 401" in part["reason"], part
    assert "model.api_key" in part["fix"]


def test_each_kind_of_failure_has_its_fix() -> None:
    calls = ModelCalls()
    calls.failed(ModelUnreachableError("no route to 10.0.0.1"), "big-model")
    report = calls.health(now=calls.failed_at)
    assert report["reason"] == "the last model call failed 0 s ago: Unreachable (big-model)"
    assert "model.base_url" in report["fix"] and "10.0.0.1" not in str(report)
    calls.answered()
    assert calls.health()["status"] == "ok"
    calls.failed(ModelAuthError("nope", status_code=403), None)
    assert calls.health()["reason"].endswith("Auth, HTTP 403")
