"""`search.embeddings: endpoint`: vectors from the model endpoint's /v1/embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.memory import embeddings
from hermes.store.sqlite import SQLiteStore
from hermes.testing.fake_model import EMBEDDING_DIMENSIONS, FakeModel
from tests.conftest import run_cli


def _history(tmp_path: Path) -> Path:
    sessions = [
        ("garden", ["The tomatoes in the greenhouse are ripening early this year.", "Nice!"]),
        ("taxes", ["I filed the tax return on Monday, finally.", "Well done."]),
    ]
    data = tmp_path / "history.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "id": sid,
                    "started_at": 1_700_000_000,
                    "messages": [
                        {"role": "user" if i % 2 == 0 else "assistant", "content": t}
                        for i, t in enumerate(texts)
                    ],
                }
            )
            + "\n"
            for sid, texts in sessions
        )
    )
    return data


@pytest.fixture
def endpoint_home(home: Path, monkeypatch: pytest.MonkeyPatch):
    with FakeModel() as fake:
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text(
            "search:\n  embeddings: endpoint\n  embedding_model: text-embedding-3-small\n"
        )
        monkeypatch.setenv("HERMES_EMBEDDINGS", "endpoint")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("HERMES_MODEL", "echo")
        yield fake


def test_messages_get_the_endpoints_vectors_tagged_with_its_model(endpoint_home, tmp_path):
    r = run_cli("sessions", "import", str(_history(tmp_path)))
    assert r.returncode == 0, r.stderr
    asked = [q for q in endpoint_home.records if q.path.endswith("/embeddings")]
    assert asked and all(q.body["model"] == "text-embedding-3-small" for q in asked)

    store = SQLiteStore(load_settings().home / "state.db")
    try:
        assert store.vectors is not None
        assert store.vectors.count("endpoint:text-embedding-3-small", "default") >= 4
        assert store.vectors.count(embeddings.MODEL_NAME, "default") == 0
    finally:
        store.close()
    found = run_cli("sessions", "search", "greenhouse tomatoes", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["session_id"] == "garden"
    assert embeddings.load(load_settings()).dimensions == EMBEDDING_DIMENSIONS


def test_endpoint_without_an_embedding_model_says_what_to_set(home, monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_EMBEDDINGS", "endpoint")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    r = run_cli("sessions", "import", str(_history(tmp_path)))
    assert r.returncode == 1
    assert "search.embedding_model is not set" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_endpoint_that_refuses_is_named_in_the_error(endpoint_home, tmp_path):
    endpoint_home.api_key = "the-right-key"  # the endpoint now wants a key we do not send
    r = run_cli("sessions", "import", str(_history(tmp_path)))
    assert r.returncode == 1
    assert "/embeddings answered 401" in r.stderr


def test_a_failed_model_does_not_stop_another_from_loading(endpoint_home, monkeypatch):
    """One process may ask for several models (profiles, a changed setting): a failure is
    remembered for the model that failed, not for every model after it."""
    monkeypatch.setattr(embeddings, "_loaded", None)
    monkeypatch.setattr(embeddings, "_loaded_for", None)
    monkeypatch.setattr(embeddings, "_failed", None)
    endpoint_home.api_key = "the-right-key"
    with pytest.raises(embeddings.EmbeddingsUnavailableError, match="answered 401"):
        embeddings.load(load_settings())
    with FakeModel() as other:
        monkeypatch.setenv("OPENAI_BASE_URL", other.base_url)
        embedder = embeddings.load(load_settings())
        assert embedder is not None and embedder.dimensions == EMBEDDING_DIMENSIONS
    monkeypatch.setenv("OPENAI_BASE_URL", endpoint_home.base_url)
    with pytest.raises(embeddings.EmbeddingsUnavailableError, match="answered 401"):
        embeddings.load(load_settings())  # the one that failed is not tried on every call
