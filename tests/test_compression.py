"""Context compression through the real agent loop against the scripted fake model."""

from __future__ import annotations

from typing import Any

import pytest

from hermes.agent.compression import SUMMARIZER_INSTRUCTIONS, SUMMARY_PREFIX
from hermes.agent.history import CompressingHistory
from hermes.agent.memory_providers import MemoryProvider
from hermes.agent.tokens import estimate_messages_tokens, estimate_tools_tokens
from hermes.agent.turn import TurnRequest
from hermes.config.settings import Settings
from hermes.models.errors import ContextLengthExceededError
from hermes.runtime import Runtime, build_runtime
from hermes.testing.fake_model import ContextLengthError, Error, FakeModel, Text, ToolCalls
from hermes.tools.registry import Toolset, tool
from tests.conftest import run_cli

FILLER = "lorem ipsum dolor sit amet " * 12  # ~320 chars, ~80 tokens


def is_summary(req: dict[str, Any]) -> bool:
    return req["messages"][0]["content"] == SUMMARIZER_INSTRUCTIONS


def main_requests(fake: FakeModel) -> list[dict[str, Any]]:
    return [r for r in fake.chat_requests() if not is_summary(r)]


def summary_requests(fake: FakeModel) -> list[dict[str, Any]]:
    return [r for r in fake.chat_requests() if is_summary(r)]


def scripted(summaries: list[str] | None = None):
    """Default responder: numbered summaries for summary calls, filler answers otherwise."""
    counter = {"n": 0}

    def respond(req: dict[str, Any]):
        if is_summary(req):
            counter["n"] += 1
            text = (
                (summaries or [])[counter["n"] - 1]
                if summaries and counter["n"] <= len(summaries)
                else f"## Goal\nSUMMARY-{counter['n']}"
            )
            return Text(text)
        return Text("answer " + FILLER, prompt_tokens=None)

    return respond


@pytest.fixture(autouse=True)
def plain_agent(settings: Settings) -> None:
    """No built-in tools and no memory review: these tests measure compression alone."""
    settings.agent.toolsets = []
    settings.memory.review_interval = 0


@pytest.fixture
async def small(settings: Settings):
    settings.model.context_length = 2000  # threshold 0.5 -> 1000 tokens
    rt = build_runtime(settings)
    try:
        yield rt
    finally:
        await rt.aclose()


async def chat(rt: Runtime, text: str, session: str = "long", **kw: Any):
    return await rt.agent.run_turn(TurnRequest(text, session_id=session, **kw))


def prompt_text(req: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in req["messages"])


async def test_threshold_triggers_and_keeps_head_tail_and_originals(
    small: Runtime, fake: FakeModel
) -> None:
    fake.default = scripted()
    for i in range(12):
        await chat(small, f"turn {i}: fact-{i} {FILLER}")
    assert summary_requests(fake), "no compression happened"
    last = main_requests(fake)[-1]
    text = prompt_text(last)
    assert SUMMARY_PREFIX in text and text.count(SUMMARY_PREFIX) == 1
    assert "turn 0: fact-0" in text  # head protected
    assert "turn 11: fact-11" in text and "turn 10: fact-10" in text  # tail kept
    assert "turn 5: fact-5" not in text  # middle summarised away
    assert isinstance(small.agent.policy, CompressingHistory)
    # every prompt stays under the window (the chars/4 estimate the policy budgets with)
    assert all(
        estimate_messages_tokens(r["messages"]) + estimate_tools_tokens(r.get("tools") or []) < 2000
        for r in main_requests(fake)
    )
    # nothing deleted: all 24 originals stored and searchable
    assert len(small.store.get_messages("default", "long")) == 24
    assert small.store.search.match_messages("default", ["fact", "5"])[0].session_id == "long"


async def test_usage_reflects_compressed_prompt(small: Runtime, fake: FakeModel) -> None:
    fake.default = scripted()
    results = [await chat(small, f"turn {i} {FILLER}") for i in range(12)]
    sizes = [r.usage.prompt_tokens for r in results]
    assert max(sizes[6:]) < 2000
    assert (
        sizes[-1] < sum(len(f"turn {i} {FILLER}") for i in range(12)) // 4
    )  # not the full transcript


async def test_summary_is_updated_not_stacked(small: Runtime, fake: FakeModel) -> None:
    fake.default = scripted()
    for i in range(30):
        await chat(small, f"turn {i} {FILLER}")
    summaries = summary_requests(fake)
    assert len(summaries) >= 2
    second = summaries[1]["messages"][1]["content"]
    assert "existing summary" in second and "SUMMARY-1" in second
    text = prompt_text(main_requests(fake)[-1])
    assert text.count(SUMMARY_PREFIX) == 1 and f"SUMMARY-{len(summaries)}" in text
    assert "SUMMARY-1\n" not in text  # the first summary was replaced, not stacked
    markers = small.store.compression_markers("default", "long")
    assert [m["seq"] for m in markers] == list(range(1, len(summaries) + 1))
    assert all(m["head_end"] == markers[0]["head_end"] for m in markers)


async def test_view_survives_a_restart(settings: Settings, fake: FakeModel) -> None:
    settings.model.context_length = 2000
    fake.default = scripted()
    rt = build_runtime(settings)
    for i in range(12):
        await chat(rt, f"turn {i} {FILLER}")
    await rt.aclose()
    rt2 = build_runtime(settings)
    try:
        await chat(rt2, "after restart")
    finally:
        await rt2.aclose()
    text = prompt_text(main_requests(fake)[-1])
    assert SUMMARY_PREFIX in text and "turn 3 " not in text and "after restart" in text


@tool
def read_log(name: str) -> str:
    """Return a big log."""
    return f"log {name}: " + "x" * 1500


async def test_tool_call_and_result_are_never_separated(small: Runtime, fake: FakeModel) -> None:
    fake.default = scripted()
    tools = Toolset([read_log])
    for i in range(8):
        fake.enqueue(
            ToolCalls([("read_log", {"name": f"a{i}"}), ("read_log", {"name": f"b{i}"})]),
            when=lambda r: not is_summary(r) and r["messages"][-1]["role"] == "user",
        )
        await chat(small, f"check logs {i}", toolset=tools)
    assert summary_requests(fake)
    for req in main_requests(fake):
        msgs = req["messages"]
        for pos, m in enumerate(msgs):
            if m["role"] == "tool":
                owner = next(x for x in reversed(msgs[:pos]) if x["role"] != "tool")
                assert owner["role"] == "assistant" and any(
                    c["id"] == m["tool_call_id"] for c in owner["tool_calls"]
                )
            if m.get("tool_calls"):
                ids = {c["id"] for c in m["tool_calls"]}
                following = {
                    x["tool_call_id"]
                    for x in msgs[pos + 1 : pos + 1 + len(ids)]
                    if x["role"] == "tool"
                }
                assert ids == following
    # old large tool outputs were cleared before summarising
    assert "x" * 500 not in summary_requests(fake)[0]["messages"][1]["content"]


async def test_failed_summary_falls_back_and_backs_off(small: Runtime, fake: FakeModel) -> None:
    def respond(req: dict[str, Any]):
        if is_summary(req):
            return Error(500, "summariser down")
        return Text("answer " + FILLER)

    fake.default = respond
    for i in range(20):
        await chat(small, f"turn {i}: Decision: use postgres-{i} {FILLER}")
    policy = small.agent.policy
    assert policy.stats.compressions >= 2
    assert policy.stats.summary_calls == 1  # later passes were inside the cooldown
    from hermes.server.metrics import Metrics

    scraped = Metrics(small).render(None).decode()  # what /metrics shows
    assert f"hermes_compressions_total {float(policy.stats.compressions)}" in scraped
    assert f"hermes_compression_fallbacks_total {float(policy.stats.fallbacks)}" in scraped
    assert policy.stats.fallbacks >= 1
    text = prompt_text(main_requests(fake)[-1])
    assert "automatic summary" in text and "Decision: use postgres-" in text


async def test_context_length_error_compresses_retries_and_learns(
    settings: Settings, fake: FakeModel
) -> None:
    fake.default = scripted()
    rt = build_runtime(settings)  # window from /v1/models: 128k, so no threshold trigger
    try:
        for i in range(8):
            await chat(rt, f"turn {i} {FILLER}")
        assert not summary_requests(fake)
        fake.enqueue(ContextLengthError(limit=1200), when=lambda r: not is_summary(r))
        result = await chat(rt, "one more")
        assert result.content.startswith("answer")
        assert summary_requests(fake)  # middle summarised in window-sized chunks
        assert rt.store.get_model_limit("fake-model") == 1200
        assert await rt.agent.policy.context_window() == 1200
    finally:
        await rt.aclose()
    rt2 = build_runtime(settings)
    try:
        assert await rt2.agent.policy.context_window() == 1200  # kept across restarts
    finally:
        await rt2.aclose()


async def test_second_context_error_ends_the_turn_clearly(small: Runtime, fake: FakeModel) -> None:
    fake.default = scripted()
    for i in range(4):
        await chat(small, f"turn {i}")
    fake.enqueue(
        ContextLengthError(limit=1900),
        ContextLengthError(limit=1900),
        when=lambda r: not is_summary(r),
    )
    with pytest.raises(ContextLengthExceededError):
        await chat(small, "too much")
    assert [m.content for m in small.store.get_messages("default", "long")][-1] != "too much"


async def test_memory_flush_runs_before_the_summary(small: Runtime, fake: FakeModel) -> None:
    fake.default = scripted()
    seen: list[tuple[str, int, int]] = []

    class Recorder(MemoryProvider):
        builtin = True

        async def on_pre_compress(
            self, scope: str, session_id: str, messages: list[dict[str, Any]]
        ) -> None:
            seen.append((scope, len(messages), len(summary_requests(fake))))

    small.agent.memory.providers.append(Recorder())
    for i in range(12):
        await chat(small, f"turn {i} {FILLER}", scope="user:zoe")
    assert seen and seen[0][0] == "user:zoe"
    assert seen[0][2] == 0  # no summary call had happened when the flush ran
    assert seen[0][1] >= 2


async def test_sessions_show_marks_compression(
    settings: Settings, fake: FakeModel, monkeypatch
) -> None:
    monkeypatch.setenv("HERMES_CONTEXT_LENGTH", "2000")
    settings.model.context_length = 2000
    fake.default = scripted()
    rt = build_runtime(settings)
    for i in range(12):
        await chat(rt, f"turn {i} {FILLER}")
    await rt.aclose()
    shown = run_cli("sessions", "show", "long")
    assert shown.returncode == 0, shown.stderr
    assert "---- compressed:" in shown.stdout


async def test_compression_refreshes_the_notes_snapshot(
    small: Runtime, fake: FakeModel, settings: Settings
) -> None:
    """A session that never ends must not keep a months-old notes snapshot."""
    fake.default = scripted()
    await chat(small, "turn 0: hello " + FILLER)
    notes = settings.home / "memories" / "MEMORY.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("User moved to Lisbon\n")  # written elsewhere, after the snapshot
    await chat(small, "turn 1: " + FILLER)
    assert "Lisbon" not in prompt_text(main_requests(fake)[-1])  # frozen: prompt caching
    for i in range(2, 12):
        await chat(small, f"turn {i}: " + FILLER)
    assert summary_requests(fake)  # compression ran
    assert "User moved to Lisbon" in str(main_requests(fake)[-1]["messages"][0]["content"])
    stored = small.store.get_session("default", "long")
    assert stored is not None and "User moved to Lisbon" in (stored.system_prompt or "")
