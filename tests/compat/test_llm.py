"""Simon Willison's `llm`, configured as its docs say for an OpenAI-compatible server: an
`extra-openai-models.yaml` entry pointing at Hermes (with the session header). Prompt,
streaming, `schema=` and tools through `model.chain`."""

from __future__ import annotations

import json
from pathlib import Path

import llm
import pytest
import yaml
from pydantic import BaseModel

from hermes.testing.fake_model import Text, ToolCalls
from tests.compat.conftest import Hermes


class City(BaseModel):
    name: str
    country: str


def get_weather(city: str) -> str:
    """Weather in a city."""
    return f"rain in {city}"


@pytest.fixture
def model(hermes: Hermes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> llm.Model:
    entry = {
        "model_id": "hermes",
        "model_name": "hermes",
        "api_base": hermes.base_url,
        "headers": {"X-Hermes-Session-Id": "llm-cli"},
        "supports_tools": True,
        "supports_schema": True,
    }
    (tmp_path / "extra-openai-models.yaml").write_text(yaml.safe_dump([entry]))
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path))
    return llm.get_model("hermes")


def test_prompt_and_stream_keep_one_session(hermes: Hermes, model: llm.Model) -> None:
    hermes.fake.enqueue(Text("Hi!"), Text("Still here.", chunk_chars=3))
    assert model.prompt("hello", key="hermes", stream=False).text() == "Hi!"
    assert "".join(model.prompt("again", key="hermes")) == "Still here."
    stored = hermes.runtime.store.get_messages("default", "llm-cli")
    assert [m.content for m in stored][-4:] == ["hello", "Hi!", "again", "Still here."]


def test_schema(hermes: Hermes, model: llm.Model) -> None:
    hermes.fake.enqueue(Text('{"name": "Lyon", "country": "France"}'))
    response = model.prompt("A French city", schema=City, key="hermes")
    assert City(**json.loads(response.text())) == City(name="Lyon", country="France")
    assert hermes.fake.chat_requests()[0]["response_format"]["type"] == "json_schema"


def test_tools_chain(hermes: Hermes, model: llm.Model) -> None:
    hermes.fake.enqueue(ToolCalls([("get_weather", {"city": "Oslo"})]), Text("Rain in Oslo."))
    chain = model.chain("Weather in Oslo?", tools=[get_weather], key="hermes")
    assert chain.text() == "Rain in Oslo."
    last = hermes.fake.chat_requests()[1]["messages"][-1]
    assert last["role"] == "tool" and last["content"] == "rain in Oslo"
