"""`GET /api/sessions?q=…&mode=meaning`: sessions found by what their messages mean, not only
by their words (the dashboard's "by meaning" search), and a clear 400 when it is off; and
the title search, which is one query however many sessions there are."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from pydantic import SecretStr

from hermes.config.settings import load_settings
from hermes.memory.embeddings import MODEL_NAME
from hermes.recall.semantic import embed_pending
from hermes.store.base import NewMessage, Store

from .conftest import AUTH, SERVER_KEY, Api, open_api

pytestmark = pytest.mark.usefixtures("on_each_backend")

CONCEPTS = [
    {"passport", "visa", "travel", "documents", "border"},
    {"tomato", "tomatoes", "garden", "greenhouse", "vegetables"},
    {"invoice", "tax", "taxes", "accountant", "money"},
]


class Concepts:
    """A stand-in embedder: a text's vector counts its words per concept, so "travel
    documents" is near "renew my passport" though they share no word."""

    name = MODEL_NAME
    dimensions = len(CONCEPTS) + 1

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            words = {w.strip(".,?!").lower() for w in text.split()}
            for col, concept in enumerate(CONCEPTS):
                out[row, col] = len(words & concept)
            out[row, -1] = 0.1  # no text is the zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


def _seed(store: Store, session_id: str, title: str, *texts: str) -> None:
    store.ensure_session("default", session_id, source="api", title=title)
    store.append_messages(
        "default",
        session_id,
        [NewMessage("user" if n % 2 == 0 else "assistant", t) for n, t in enumerate(texts)],
    )


@pytest.fixture
async def meaning_api(home: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    monkeypatch.setenv("HERMES_EMBEDDINGS", "on")
    monkeypatch.setattr("hermes.memory.embeddings.extra_installed", lambda: True)
    embedder = Concepts()
    monkeypatch.setattr("hermes.memory.embeddings._loaded", embedder)
    monkeypatch.setattr("hermes.memory.embeddings._loaded_for", None)  # kept, whatever came before
    monkeypatch.setattr("hermes.memory.embeddings._failed", None)
    settings = load_settings()
    settings.server.api_key = SecretStr(SERVER_KEY)
    async with open_api(settings) as api:
        api.client.headers.update(AUTH)
        store = api.runtime.store
        _seed(store, "trip", "Spring", "I must renew my passport and visa.", "Noted.")
        _seed(store, "veg", "Allotment", "The greenhouse tomatoes are ripe.", "Lovely.")
        _seed(store, "books", "Paperwork", "The accountant wants the invoice.", "Sent.")
        embed_pending(store, embedder)
        yield api


async def test_by_meaning_finds_what_the_words_miss(meaning_api: Api) -> None:
    c = meaning_api.client
    words = await c.get("/api/sessions", params={"q": "travel documents"})
    assert words.status_code == 200 and words.json()["sessions"] == []
    meant = await c.get("/api/sessions", params={"q": "travel documents", "mode": "meaning"})
    assert meant.status_code == 200, meant.text
    found = meant.json()["sessions"]
    assert found[0]["id"] == "trip" and found[0]["match"]["in"] == "messages"
    assert "passport" in found[0]["match"]["snippet"] or found[0]["match"]["message_index"] == 0


async def test_by_meaning_when_it_is_off_says_how_to_turn_it_on(keyed_api: Api) -> None:
    r = await keyed_api.client.get("/api/sessions", params={"q": "travel", "mode": "meaning"})
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "meaning_search_off" and "search.embeddings" in error["message"]
    bad = await keyed_api.client.get("/api/sessions", params={"q": "x", "mode": "vibes"})
    assert bad.status_code in (400, 422)


async def test_title_search_is_case_blind_and_takes_wildcards_literally(keyed_api: Api) -> None:
    store = keyed_api.runtime.store
    _seed(store, "a", "100% Done_now", "x")
    _seed(store, "b", "1000 Done now", "x")
    _seed(store, "c", "Café Über alles", "x")
    c = keyed_api.client

    async def titled(q: str) -> list[str]:
        found = (await c.get("/api/sessions", params={"q": q})).json()["sessions"]
        return sorted(s["id"] for s in found if s["match"]["in"] == "title")

    assert await titled("100%") == ["a"]
    assert await titled("done_") == ["a"]
    assert await titled("DONE") == ["a", "b"]
    assert await titled("über café") == ["c"]
    assert store.sessions_titled("default", ["done"], 1)[0].id in {"a", "b"}
