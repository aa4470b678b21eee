"""Issue 33: a request names a model Hermes offers, or gets OpenAI's 404 `model_not_found`."""

from __future__ import annotations

import pytest

from hermes.testing.fake_model import FakeModel, Text

from .conftest import Api, chat_body, chunks
from .test_basics import assert_envelope

UNKNOWN = "gpt-9-ultra"


def assert_model_not_found(r, name: str = UNKNOWN) -> None:  # type: ignore[no-untyped-def]
    error = assert_envelope(r, 404, "model_not_found", "model")
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith(f"The model '{name}' does not exist")


async def test_an_unknown_model_is_a_404_everywhere_and_the_model_is_never_called(
    api: Api, fake: FakeModel
) -> None:
    assert_model_not_found(await api.client.get(f"/v1/models/{UNKNOWN}"))
    assert_model_not_found(await api.chat("hi", model=UNKNOWN))
    assert_model_not_found(await api.chat("hi", model=UNKNOWN, stream=True))
    body = {"model": UNKNOWN, "input": "hi"}
    assert_model_not_found(await api.client.post("/v1/responses", json=body))
    assert_model_not_found(await api.client.post("/v1/responses", json={**body, "stream": True}))
    assert fake.chat_requests() == []


@pytest.mark.parametrize("name", ["hermes", "fake-model"])
async def test_offered_names_are_accepted_and_reported_truly(
    api: Api, fake: FakeModel, name: str
) -> None:
    """The advertised name and the configured model's own name (what clients set up for that
    model send) are both offered; the answer names the one asked for."""
    fake.default = Text("hello")
    assert (await api.client.get(f"/v1/models/{name}")).json()["id"] == name
    r = await api.chat("hi", model=name)
    assert r.status_code == 200 and r.json()["model"] == name
    streamed = await api.chat("hi", model=name, stream=True)
    assert {c["model"] for c in chunks(streamed.text)} == {name}
    r = await api.client.post("/v1/responses", json={"model": name, "input": "hi"})
    assert r.status_code == 200 and r.json()["model"] == name


async def test_no_model_field_reports_the_advertised_name(api: Api, fake: FakeModel) -> None:
    fake.default = Text("hello")
    body = chat_body("hi")
    del body["model"]
    r = await api.client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200 and r.json()["model"] == "hermes"
