"""Busy chats (interrupt / queue / steer), every slash command, and other chats never waiting."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from hermes.config.settings import Settings
from hermes.gateway import runner
from hermes.gateway.runner import Gateway
from hermes.plugins import load_registry
from hermes.runtime import Runtime, build_runtime
from hermes.store.base import DEFAULT_SCOPE
from hermes.testing.fake_model import FakeModel, Hang, Text, ToolCalls
from hermes.tools.approval import ApprovalRequest
from hermes.tools.registry import ToolContext, ToolError, tool
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import FRIEND, OWNER, texts, until


def last_user(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


async def test_interrupt_keeps_what_was_said_and_answers_with_full_context(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("The first half of a long story, then more", chunk_chars=5, delay=0.3))
    fake.enqueue(Text("Short answer instead."))
    await tg.user_says(OWNER, "tell me a long story")
    await until(lambda: gateway.worker(f"telegram:{OWNER}").streamed > 0)
    await tg.user_says(OWNER, "actually, keep it short")
    await tg.wait_for_sent(1)
    assert texts(tg) == ["Short answer instead."]
    second = fake.chat_requests()[1]["messages"]
    contents = [str(m.get("content")) for m in second]
    assert "tell me a long story" in contents
    assert any(c.endswith("[interrupted]") for c in contents)
    assert contents[-1] == "actually, keep it short"


async def test_queue_mode_answers_in_order(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    gateway.busy_mode = "queue"
    fake.enqueue(Hang(0.4, then=Text("one")), Text("two"))
    await tg.user_says(OWNER, "first")
    await until(lambda: gateway.worker(f"telegram:{OWNER}").busy)
    await tg.user_says(OWNER, "second")
    await tg.wait_for_sent(3)
    assert texts(tg)[0].startswith("⏳ Queued")
    assert texts(tg)[1:] == ["one", "two"]
    assert last_user(fake.chat_requests()[1]) == "second"


async def test_steer_reaches_the_running_turn_before_its_next_model_call(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    gateway.busy_mode = "steer"
    fake.enqueue(
        Hang(0.5, then=ToolCalls(("session_search", {"query": "apples"}))),
        Text("Done, in French."),
    )
    await tg.user_says(OWNER, "look up apples")
    await until(lambda: gateway.worker(f"telegram:{OWNER}").busy)
    await tg.user_says(OWNER, "answer in French")
    await tg.wait_for_sent(2)
    # on a slow machine the answer shows first as a live draft (tool progress), then final
    await until(lambda: "▍" not in texts(tg)[1] and "⚙" not in texts(tg)[1])
    assert texts(tg)[0].startswith("⏩")
    assert texts(tg)[1] == "Done, in French."
    assert last_user(fake.chat_requests()[1]) == "answer in French"
    assert len(fake.chat_requests()) == 2  # no separate turn for the steer
    stored = gateway.runtime.store.get_messages(DEFAULT_SCOPE, f"telegram:{OWNER}")
    assert [m.content for m in stored if m.role == "user"] == ["look up apples", "answer in French"]


async def test_a_busy_chat_never_blocks_another(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Hang(3.0, then=Text("slow")), when=lambda b: last_user(b) == "slow please")
    fake.enqueue(Text("fast"), when=lambda b: last_user(b) == "quick")
    await tg.user_says(OWNER, "slow please")
    await until(lambda: gateway.worker(f"telegram:{OWNER}").busy)
    await tg.user_says(FRIEND, "quick")
    await tg.wait_for_sent(1, within=2.5)
    assert texts(tg) == ["fast"]
    await tg.user_says(OWNER, "/stop")
    await tg.wait_for_sent(2)
    assert texts(tg)[1] == "⏹ Stopped."


async def test_help_status_new_queue_steer_and_sethome(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway, home: Path
) -> None:
    await tg.user_says(OWNER, "/help")
    await tg.wait_for_sent(1)
    for command in (
        "/stop",
        "/new",
        "/queue",
        "/steer",
        "/status",
        "/sethome",
        "/approve",
        "/deny",
    ):
        assert command in texts(tg)[0]

    await tg.user_says(OWNER, "/status")
    await tg.wait_for_sent(2)
    assert f"Session: telegram:{OWNER}" in texts(tg)[1] and "Busy: no" in texts(tg)[1]

    await tg.user_says(OWNER, "/stop")
    await tg.wait_for_sent(3)
    assert texts(tg)[2] == "Nothing is running."

    fake.enqueue(Text("queued answer"))
    await tg.user_says(OWNER, "/queue do this")
    await tg.wait_for_sent(4)
    assert texts(tg)[3] == "queued answer"

    fake.enqueue(Text("steered answer"))
    await tg.user_says(OWNER, "/steer idle steer runs as a turn")
    await tg.wait_for_sent(5)
    assert last_user(fake.chat_requests()[-1]) == "idle steer runs as a turn"

    await tg.user_says(OWNER, "/new")
    await tg.wait_for_sent(6)
    assert f"telegram:{OWNER}/2" in texts(tg)[5]
    fake.enqueue(Text("fresh"))
    await tg.user_says(OWNER, "hello again")
    await tg.wait_for_sent(7)
    assert [m["role"] for m in fake.chat_requests()[-1]["messages"]] == ["system", "user"]
    store = gateway.runtime.store
    assert store.get_session(DEFAULT_SCOPE, f"telegram:{OWNER}/2") is not None
    assert store.get_session(DEFAULT_SCOPE, f"telegram:{OWNER}") is not None  # kept

    await tg.user_says(FRIEND, "/sethome")
    await tg.wait_for_sent(8)
    assert "Only the owner" in texts(tg)[7]
    await tg.user_says(OWNER, "/sethome")
    await tg.wait_for_sent(9)
    config = yaml.safe_load((home / "config.yaml").read_text())
    assert config["gateway"]["home"] == f"telegram:{OWNER}"
    assert gateway.home == f"telegram:{OWNER}"
    fake.assert_complete()


async def test_topics_are_separate_sessions(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("in topic 5"), Text("in topic 9"))
    await tg.user_says(-100123, "hi", user_id=OWNER, thread_id=5, chat_type="supergroup")
    await tg.wait_for_sent(1)
    await tg.user_says(-100123, "hi", user_id=OWNER, thread_id=9, chat_type="supergroup")
    await tg.wait_for_sent(2)
    assert [int(m["message_thread_id"]) for m in tg.sent] == [5, 9]
    store = gateway.runtime.store
    assert store.get_session(DEFAULT_SCOPE, "telegram:-100123:5") is not None
    assert store.get_session(DEFAULT_SCOPE, "telegram:-100123:9") is not None


# -- approvals ------------------------------------------------------------------------------


@tool(name="danger")
async def danger(ctx: ToolContext, command: str) -> str:
    """A test tool that asks for approval like the dangerous terminal commands do.

    Args:
        command: what to run
    """
    if ctx.approver is None:
        raise ToolError("approval needed")
    decision = await ctx.approver.approve(
        ApprovalRequest("danger", command, "it deletes things", ctx.scope, ctx.session_id)
    )
    return "ran" if decision != "deny" else "refused by the user"


@pytest.fixture
async def approval_gateway(gw_settings: Settings) -> AsyncIterator[tuple[Runtime, Gateway]]:
    registry = load_registry(plugins=False)
    registry.tool(danger)
    runtime = build_runtime(gw_settings, registry=registry)
    gw = runtime.services.get(Gateway)
    await gw.start()
    try:
        await until(lambda: gw.status["telegram"].connected)
        yield runtime, gw
    finally:
        await gw.stop()
        await runtime.aclose()


@pytest.mark.parametrize(("answer", "outcome"), [("/approve", "ran"), ("/deny", "refused")])
async def test_approve_and_deny(
    tg: TelegramBotAPI,
    fake: FakeModel,
    approval_gateway: tuple[Runtime, Gateway],
    answer: str,
    outcome: str,
) -> None:
    _, gw = approval_gateway
    fake.enqueue(ToolCalls(("danger", {"command": "rm -rf /tmp/x"})), Text("finished"))
    await tg.user_says(OWNER, "/approve")
    await tg.wait_for_sent(1)
    assert texts(tg)[0] == "Nothing is waiting for approval."
    await tg.user_says(OWNER, "clean up")
    await tg.wait_for_sent(2)
    assert "Approval needed" in texts(tg)[1] and "rm -rf /tmp/x" in texts(tg)[1]
    await tg.user_says(FRIEND, answer, user_id=FRIEND)  # another chat: not this approval
    await tg.wait_for_sent(3)
    await tg.user_says(OWNER, answer)
    await tg.wait_for_sent(5)
    tool_result = [m for m in fake.chat_requests()[1]["messages"] if m["role"] == "tool"][0]
    assert outcome in tool_result["content"]
    # the answer may show first as a draft (a slow turn), then edited
    await until(lambda: texts(tg)[-1] == "finished", what="the answer")


async def test_in_a_group_each_person_has_their_own_turns(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    group = -100777
    fake.enqueue(Hang(1.0, then=Text("owner answer")), when=lambda b: last_user(b) == "owner asks")
    fake.enqueue(Text("friend answer"), when=lambda b: last_user(b) == "friend asks")
    await tg.user_says(group, "owner asks", user_id=OWNER, chat_type="group")
    await until(lambda: gateway.worker(f"telegram:{group}").busy)
    await tg.user_says(group, "friend asks", user_id=FRIEND, chat_type="group")
    await tg.wait_for_sent(2)
    assert sorted(texts(tg)) == ["friend answer", "owner answer"]  # nobody was interrupted
    store = gateway.runtime.store
    assert store.get_session(DEFAULT_SCOPE, f"telegram:{group}") is not None
    assert store.get_session(f"user:telegram:{FRIEND}", f"telegram:{group}") is not None


async def test_a_dangerous_terminal_command_waits_for_approve_in_the_chat(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway, tmp_path: Path
) -> None:
    workdir = Path(gateway.runtime.settings.home) / "workspace"
    target = workdir / "build"
    await asyncio.to_thread(lambda: target.mkdir(parents=True, exist_ok=True))
    fake.enqueue(
        ToolCalls(("terminal", {"command": "rm -rf build && echo removed"})), Text("Done.")
    )
    await tg.user_says(OWNER, "clean the build folder")
    await tg.wait_for_sent(1)
    assert "Approval needed" in texts(tg)[0] and "rm -rf build" in texts(tg)[0]
    assert await asyncio.to_thread(target.exists)
    await tg.user_says(OWNER, "/approve")
    await tg.wait_for_sent(3)
    assert texts(tg)[1:] == ["✅ Approved.", "Done."]
    tool_result = [m for m in fake.chat_requests()[1]["messages"] if m["role"] == "tool"][0]
    assert "removed" in tool_result["content"]
    assert not await asyncio.to_thread(target.exists)


# -- stopping ---------------------------------------------------------------------------------


async def test_a_turn_that_will_not_stop_does_not_hold_the_gateways_stop(
    tg: TelegramBotAPI,
    fake: FakeModel,
    gw_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    released = asyncio.Event()
    started = asyncio.Event()

    @tool(name="stubborn")
    async def stubborn(ctx: ToolContext) -> str:
        """A test tool that ignores being cancelled until the test lets it go."""
        started.set()
        while not released.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await released.wait()
        return "done"

    monkeypatch.setattr(runner, "STOP_STEP_S", 0.3)
    registry = load_registry(plugins=False)
    registry.tool(stubborn)
    runtime = build_runtime(gw_settings, registry=registry)
    gw = runtime.services.get(Gateway)
    try:
        await gw.start()
        await until(lambda: gw.status["telegram"].connected)
        fake.enqueue(ToolCalls(("stubborn", {})), Text("finished"))
        await tg.user_says(OWNER, "go")
        await asyncio.wait_for(started.wait(), 30)
        async with asyncio.timeout(10):  # without the deadlines: forever
            await gw.stop()
        assert f"the turn in telegram:{OWNER} did not end within 0.3 s" in caplog.text
    finally:
        released.set()
        await runtime.aclose()
