"""A lone turn's store writes run on the event loop's own thread (issue #44), but never make
it wait: over HTTP, a turn that finds another process's transaction holding the SQLite
database leaves its write to the store's writer thread, the server goes on answering, and
the turn completes once the other process commits."""

from __future__ import annotations

import asyncio
import sqlite3
import time

from hermes.config.settings import Settings
from hermes.testing.fake_model import FakeModel, Text

from .conftest import open_api

SESSION = {"X-Hermes-Session-Id": "s"}


async def test_a_turn_waits_for_another_process_without_stalling_the_server(
    settings: Settings, fake: FakeModel
) -> None:
    async with open_api(settings) as api:
        fake.enqueue(Text("first answer"))
        assert (await api.chat("first", headers=SESSION)).status_code == 200
        other = sqlite3.connect(api.runtime.store.path, isolation_level=None)  # type: ignore[attr-defined]
        other.execute("BEGIN IMMEDIATE")  # another process writing
        try:
            fake.enqueue(Text("second answer"))
            turn = asyncio.ensure_future(api.chat("second", headers=SESSION))
            started = time.monotonic()
            await asyncio.sleep(0.2)
            assert time.monotonic() - started < 2  # no statement slept in SQLite's busy wait
            assert not turn.done()
            health = await api.client.get("/health")  # the loop is free meanwhile
            assert health.status_code == 200
        finally:
            other.execute("COMMIT")
            other.close()
        answer = await turn
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["content"] == "second answer"
        stored = api.runtime.store.get_messages("default", "s")
        assert [m.content for m in stored] == ["first", "first answer", "second", "second answer"]
