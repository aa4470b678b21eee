import asyncio
import json

import pytest

from hermes.agent.locks import SessionBusyError, SessionLocks
from hermes.agent.turn import TurnObserver, TurnRequest
from hermes.models.errors import ModelUnavailableError
from hermes.runtime import Runtime
from hermes.store.base import Lease
from hermes.store.sqlite import SQLiteStore
from hermes.testing.fake_model import Error, FakeModel, Hang, Text, ToolCalls
from hermes.tools.registry import ToolContext, ToolError, Toolset, tool
from tests.store_edits import take_lease


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b


@tool
async def whoami(ctx: ToolContext) -> str:
    """Say which scope and session the call belongs to."""
    return f"{ctx.scope}/{ctx.session_id}"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@tool
def refuse() -> str:
    """Fails politely."""
    raise ToolError("not allowed here")


TOOLS = Toolset([add, whoami, explode, refuse])


def _tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_schema_is_derived_from_signature_and_docstring() -> None:
    schema = add.schema()["function"]
    assert schema["name"] == "add" and schema["description"] == "Add two integers."
    assert schema["parameters"]["required"] == ["a", "b"]
    assert schema["parameters"]["properties"]["a"] == {
        "type": "integer",
        "description": "first number",
    }
    assert "ctx" not in whoami.schema()["function"]["parameters"]["properties"]


async def test_single_tool_call_then_answer(runtime: Runtime, fake: FakeModel) -> None:
    fake.enqueue(ToolCalls([("add", {"a": 2, "b": 3})]), Text("2 + 3 = 5"))
    result = await runtime.agent.run_turn(
        TurnRequest("what is 2+3?", session_id="s1", toolset=TOOLS)
    )
    assert result.content == "2 + 3 = 5" and result.iterations == 2
    second = fake.chat_requests()[1]
    assert _tool_messages(second) == [{"role": "tool", "tool_call_id": "call_1", "content": "5"}]
    assert {t["function"]["name"] for t in fake.chat_requests()[0]["tools"]} == {
        "add",
        "whoami",
        "explode",
        "refuse",
    }
    stored = runtime.store.get_messages("default", "s1")
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1].tool_calls[0]["function"]["name"] == "add"
    assert stored[2].tool_name == "add"
    fake.assert_complete()


async def test_parallel_tool_calls_keep_order(runtime: Runtime, fake: FakeModel) -> None:
    fake.enqueue(ToolCalls([("add", {"a": 1, "b": 1}), ("whoami", {})]), Text("done"))
    await runtime.agent.run_turn(TurnRequest("go", session_id="p", scope="user:ann", toolset=TOOLS))
    tools = _tool_messages(fake.chat_requests()[1])
    assert [t["content"] for t in tools] == ["2", "user:ann/p"]
    assert [t["tool_call_id"] for t in tools] == ["call_1", "call_2"]


async def test_failing_tools_become_errors_not_crashes(runtime: Runtime, fake: FakeModel) -> None:
    fake.enqueue(
        ToolCalls([("explode", {"reason": "x"}), ("refuse", {}), ("nope", {}), ("add", '{"a": 1')]),
        ToolCalls([("add", {"a": "not a number", "b": 1})]),
        Text("sorry"),
    )
    result = await runtime.agent.run_turn(TurnRequest("try", session_id="f", toolset=TOOLS))
    assert result.content == "sorry"
    first = [t["content"] for t in _tool_messages(fake.chat_requests()[1])]
    assert first[0].startswith("Error: explode failed: RuntimeError: boom: x")
    assert first[1] == "Error: not allowed here"
    assert "no tool named 'nope'" in first[2]
    assert "not valid JSON" in first[3]
    assert "invalid arguments: a:" in _tool_messages(fake.chat_requests()[2])[-1]["content"]


async def test_iteration_bound_forces_a_final_answer(runtime: Runtime, fake: FakeModel) -> None:
    runtime.agent.settings.agent.max_iterations = 3
    fake.enqueue(*[ToolCalls([("add", {"a": i, "b": 0})]) for i in range(3)], Text("gave up"))
    result = await runtime.agent.run_turn(TurnRequest("loop", session_id="b", toolset=TOOLS))
    assert result.content == "gave up" and result.finish_reason == "length"
    requests = fake.chat_requests()
    assert len(requests) == 4
    assert "tools" not in requests[-1]
    assert "maximum number of tool steps" in requests[-1]["messages"][-1]["content"]


async def test_history_is_loaded_for_a_named_session(runtime: Runtime, fake: FakeModel) -> None:
    fake.enqueue(Text("Hello Alex"), Text("Go"))
    await runtime.agent.run_turn(TurnRequest("I'm Alex, I write Go", session_id="mine"))
    await runtime.agent.run_turn(TurnRequest("what language?", session_id="mine"))
    messages = fake.chat_requests()[1]["messages"]
    assert messages[0]["role"] == "system"
    assert [m["content"] for m in messages[1:]] == [
        "I'm Alex, I write Go",
        "Hello Alex",
        "what language?",
    ]
    # the frozen system prompt is identical on both calls (prompt caching)
    assert fake.chat_requests()[0]["messages"][0] == messages[0]


async def test_concurrent_turns_on_one_session_are_serialised(
    runtime: Runtime, fake: FakeModel
) -> None:
    fake.default = lambda req: Text(f"echo {len(req['messages'])}")
    results = await asyncio.gather(
        *(runtime.agent.run_turn(TurnRequest(f"msg {i}", session_id="busy")) for i in range(6))
    )
    stored = runtime.store.get_messages("default", "busy")
    assert len(stored) == 12
    assert [m.role for m in stored] == ["user", "assistant"] * 6
    # each turn saw every earlier exchange: 1 system + 2 per earlier turn + its own user message
    sizes = sorted(int(r.content.split()[1]) for r in results)
    assert sizes == [2 + 2 * i for i in range(6)]


async def test_model_failure_stores_nothing(runtime: Runtime, fake: FakeModel) -> None:
    fake.enqueue(Error(503, "overloaded"))
    with pytest.raises(ModelUnavailableError, match="503"):
        await runtime.agent.run_turn(TurnRequest("hi", session_id="fail"))
    assert runtime.store.get_messages("default", "fail") == []


async def test_cancelled_turn_keeps_what_was_said(runtime: Runtime, fake: FakeModel) -> None:
    started = asyncio.Event()

    class Watch(TurnObserver):
        def on_delta(self, text: str) -> None:
            started.set()

    fake.enqueue(
        ToolCalls([("add", {"a": 1, "b": 2})]),
        Text("partial answer that goes on", chunk_chars=4, delay=0.5),
    )
    task = asyncio.create_task(
        runtime.agent.run_turn(TurnRequest("go", session_id="cut", toolset=TOOLS), Watch())
    )
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stored = runtime.store.get_messages("default", "cut")
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[-1].content.startswith("part") and stored[-1].content.endswith("[interrupted]")
    assert _leases(runtime.store) == []
    assert runtime.store.get_session("default", "cut").system_prompt  # frozen with what was said


async def test_stateless_turn_uses_body_history_and_is_recorded(
    runtime: Runtime, fake: FakeModel
) -> None:
    fake.enqueue(Text("yes"))
    history = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "noted"}]
    result = await runtime.agent.run_turn(TurnRequest("and now?", history=history, source="api"))
    assert [m["content"] for m in fake.chat_requests()[0]["messages"][1:]] == [
        "earlier",
        "noted",
        "and now?",
    ]
    assert result.session_id.startswith("api-")
    assert [m.content for m in runtime.store.get_messages("default", result.session_id)] == [
        "and now?",
        "yes",
    ]


async def test_hang_is_bounded_by_timeout(runtime: Runtime, fake: FakeModel) -> None:
    runtime.model.timeout = 0.3
    fake.enqueue(Hang(5))
    client = type(runtime.model)(
        base_url=fake.base_url, api_key=None, model="m", timeout=0.3, max_retries=0
    )
    runtime.agent.model = client
    try:
        with pytest.raises(ModelUnavailableError):
            await runtime.agent.run_turn(TurnRequest("hi", session_id="slow"))
    finally:
        await client.aclose()
    assert json.loads(json.dumps(runtime.store.health()))["ok"]


async def test_user_turn_numbers_count_stored_turns(runtime: Runtime, fake: FakeModel) -> None:
    fake.default = Text("ok")
    numbers = [
        (await runtime.agent.run_turn(TurnRequest(f"m{i}", session_id="n"))).user_turn_number
        for i in range(3)
    ]
    assert numbers == [1, 2, 3]
    assert runtime.store.get_session("default", "n").user_turns == 3


def _leases(store: SQLiteStore) -> list[tuple[str, str]]:
    return store.connection.execute("SELECT name, holder FROM locks").fetchall()


def _count_writes(store: SQLiteStore) -> list[str]:
    writes: list[str] = []
    store.connection.set_trace_callback(
        lambda sql: writes.append(sql) if sql.startswith("BEGIN") else None
    )
    return writes


async def test_a_turn_costs_two_writes_and_leaves_the_session_free(
    runtime: Runtime, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    writes = _count_writes(runtime.store)
    await runtime.agent.run_turn(TurnRequest("first", session_id="s1", source="api"))
    assert len(writes) == 2  # lease + new session + its frozen prompt; messages + release
    writes.clear()
    result = await runtime.agent.run_turn(TurnRequest("second", session_id="s1", source="api"))
    assert len(writes) == 2
    writes.clear()
    await runtime.agent.run_turn(TurnRequest("no session", source="api"))
    assert len(writes) == 2
    runtime.store.connection.set_trace_callback(None)
    assert (result.source, result.message_count, result.user_turn_number) == ("api", 4, 2)
    assert _leases(runtime.store) == []
    other = SQLiteStore(runtime.store.path)  # another Hermes process may take the session now
    try:
        lease = Lease("session:default:s1", "other-process")
        assert (
            other.begin_turn("default", "s1", source="api", lease=lease, ttl_seconds=60) is not None
        )
    finally:
        other.close()


async def test_a_failed_model_call_releases_the_lease(runtime: Runtime, fake: FakeModel) -> None:
    fake.enqueue(Error(503, "overloaded"), Text("better now"))
    with pytest.raises(ModelUnavailableError):
        await runtime.agent.run_turn(TurnRequest("hi", session_id="s1"))
    assert _leases(runtime.store) == []
    other = SQLiteStore(runtime.store.path)
    try:
        assert take_lease(other, "session:default:s1", "other-process", 60)
        other.release_lock("session:default:s1", "other-process")
    finally:
        other.close()
    result = await runtime.agent.run_turn(TurnRequest("hi again", session_id="s1"))
    assert result.content == "better now"
    assert [m.content for m in runtime.store.get_messages("default", "s1")] == [
        "hi again",
        "better now",
    ]


async def test_a_turn_longer_than_its_lease_keeps_it_by_heartbeat(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leases are short so a killed process frees its sessions soon; a turn that outlives
    one renews it, and another process cannot take the session meanwhile. The control (no
    beat within the lease) shows the lease does expire without it."""
    monkeypatch.setattr("hermes.agent.locks.LEASE_SECONDS", 0.3)
    other = SQLiteStore(runtime.store.path)
    try:
        monkeypatch.setattr("hermes.agent.locks.HEARTBEAT_SECONDS", 60)
        async with SessionLocks(runtime.store).hold("default", "idle", source="api"):
            await asyncio.sleep(0.6)
            assert other.acquire_lock("session:default:idle", "other-process", 60)
        other.release_lock("session:default:idle", "other-process")

        monkeypatch.setattr("hermes.agent.locks.HEARTBEAT_SECONDS", 0.05)
        async with SessionLocks(runtime.store).hold("default", "long", source="api"):
            await asyncio.sleep(0.6)
            assert not other.acquire_lock("session:default:long", "other-process", 60)
        assert _leases(runtime.store) == []  # given up at the end, and no beat after it
        await asyncio.sleep(0.1)
        assert _leases(runtime.store) == []
    finally:
        other.close()


async def test_a_session_held_by_another_process_waits_then_reports_busy(
    runtime: Runtime, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    other = SQLiteStore(runtime.store.path)
    name = "session:default:held"
    try:
        assert take_lease(other, name, "other-process", 60)
        runtime.agent.locks = SessionLocks(runtime.store, wait_seconds=0.2)
        with pytest.raises(SessionBusyError):
            await runtime.agent.run_turn(TurnRequest("hi", session_id="held"))
        assert fake.chat_requests() == [] and runtime.store.get_messages("default", "held") == []
        assert _leases(runtime.store) == [(name, "other-process")]
        runtime.agent.locks = SessionLocks(runtime.store, wait_seconds=10)
        turn = asyncio.create_task(runtime.agent.run_turn(TurnRequest("hi", session_id="held")))
        await asyncio.sleep(0.2)
        assert not turn.done()  # still polling for the lease
        other.release_lock(name, "other-process")
        assert (await asyncio.wait_for(turn, 5)).content == "ok"
    finally:
        other.close()
    assert _leases(runtime.store) == []
