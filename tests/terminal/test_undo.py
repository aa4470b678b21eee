"""/undo and /retry at the agent level: the exchange leaves the prompt, stays in the store,
and a compression summary is out of reach."""

from __future__ import annotations

from hermes.agent.turn import TurnRequest
from hermes.agent.undo import last_exchange, undo_last_exchange
from hermes.runtime import Runtime
from hermes.testing.fake_model import FakeModel, Text


def _users(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_undo_drops_the_last_exchange_from_the_prompt(
    runtime: Runtime, fake: FakeModel
) -> None:
    fake.enqueue(Text("one"), Text("two"), Text("three"))
    for text in ("first", "second", "third"):
        await runtime.agent.run_turn(TurnRequest(user_message=text, session_id="s"))
    taken = undo_last_exchange(runtime.store, "default", "s")
    assert taken is not None and taken.user_text == "third" and (taken.start, taken.end) == (4, 6)
    taken = undo_last_exchange(runtime.store, "default", "s")
    assert taken is not None and taken.user_text == "second"
    fake.enqueue(Text("four"))
    await runtime.agent.run_turn(TurnRequest(user_message="fourth", session_id="s"))
    assert _users(fake.chat_requests()[-1]) == ["first", "fourth"]
    stored = [m.content for m in runtime.store.get_messages("default", "s")]
    assert stored[:6] == ["first", "one", "second", "two", "third", "three"]  # all kept


async def test_undo_stops_at_a_compression_summary(runtime: Runtime, fake: FakeModel) -> None:
    fake.enqueue(Text("one"))
    await runtime.agent.run_turn(TurnRequest(user_message="first", session_id="c"))
    count = runtime.store.get_session("default", "c").message_count  # type: ignore[union-attr]
    runtime.store.add_compaction(
        "default", "c", head_end=0, upto_idx=count, summary="earlier: first", kind="model"
    )
    assert last_exchange(runtime.store, "default", "c") is None
    assert last_exchange(runtime.store, "default", "missing") is None
