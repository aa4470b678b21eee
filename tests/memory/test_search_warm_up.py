"""`hermes sessions search` times searches, not the process getting ready: the scope's
vectors loading and the model's first run (slow here on purpose) happen before the first
`took_ms` starts, as loading the model already did."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli
from tests.memory.conftest import Digests

FIRST_RUN_S = 1.0


class _SlowFirstRun(Digests):
    def __init__(self) -> None:
        self.questions = 0

    def encode_query(self, text: str) -> np.ndarray:
        self.questions += 1
        if self.questions == 1:
            time.sleep(FIRST_RUN_S)
        return super().encode_query(text)


def test_the_first_timed_search_is_not_charged_for_getting_ready(
    home: Path, digests: Digests, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = _SlowFirstRun()
    monkeypatch.setattr("hermes.memory.embeddings._loaded", slow)
    history = tmp_path / "history.jsonl"
    texts = ["We adopted a cat named Miso.", "Oh lovely!", "I started pottery.", "Nice."]
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)
    ]
    history.write_text(json.dumps({"id": "s1", "messages": messages}) + "\n")
    assert run_cli("sessions", "import", str(history)).returncode == 0
    batch = tmp_path / "questions.jsonl"
    batch.write_text('{"query": "what is the cat called"}\n{"query": "pottery"}\n')
    r = run_cli("sessions", "search", "--batch", str(batch))
    assert r.returncode == 0, r.stderr
    took = [json.loads(line)["took_ms"] for line in r.stdout.splitlines()]
    assert len(took) == 2 and slow.questions == 3  # one question before the timed two
    assert max(took) < FIRST_RUN_S * 1000 / 2, took
