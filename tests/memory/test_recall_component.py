"""The semantic index belongs to a runtime's recall component, not to the process."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.recall.component import Recall
from hermes.runtime import Runtime, open_store
from tests.memory.conftest import Digests


async def test_each_runtime_has_its_own_recall_over_its_own_store(
    digests: Digests, runtime: Runtime
) -> None:
    recall = runtime.services.get(Recall)
    assert recall.store is runtime.store
    index = recall.semantic(wait=True)
    assert index is not None and recall.semantic(wait=False) is index  # made once, then kept
    settings = load_settings()
    other_store = open_store(settings)
    try:
        other = Recall(settings, other_store)
        assert other.semantic(wait=True) is not index  # another store: another cache
    finally:
        other_store.close()


def test_search_by_meaning_off_builds_no_index(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_EMBEDDINGS", "off")
    settings = load_settings()
    store = open_store(settings)
    try:
        assert Recall(settings, store).semantic(wait=True) is None
    finally:
        store.close()
