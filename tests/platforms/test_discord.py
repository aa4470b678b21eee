"""Discord through discord.py against the loopback REST + gateway stand-in: DMs, mentions in
allowed channels, threads and per-person sessions, 2,000-char splits, typing, rate limits,
resuming after the gateway drops, and a refused token."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from hermes.delivery import Outbound
from hermes.gateway.delivery import GatewayDeliverer
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Hang, Text
from tests.standins.discord_api import CHANNEL, THREAD, DiscordAPI

from .conftest import Served, quicken, until

OWNER = "100000000000000001"
FRIEND = "100000000000000002"
STRANGER = "100000000000000666"


@pytest.fixture
async def dc() -> AsyncIterator[DiscordAPI]:
    async with DiscordAPI() as api:
        yield api


def dc_env(dc: DiscordAPI) -> dict[str, str]:
    return {
        "DISCORD_BOT_TOKEN": dc.token,
        "DISCORD_ALLOWED_USERS": f"{OWNER},{FRIEND}",
        "HERMES_GATEWAY_OWNER": f"discord:{OWNER}",
    }


@pytest.fixture
def start(dc: DiscordAPI, serve_gateway: Callable[..., Any]) -> Callable[..., Any]:
    def go(**cfg: Any) -> Any:
        return serve_gateway(
            dc_env(dc),
            "discord",
            config={"api_base": dc.base_url, "guild_ready_timeout": 0.2, **cfg},
        )

    return go


@pytest.fixture
async def served(start: Callable[..., Any], dc: DiscordAPI) -> AsyncIterator[Served]:
    async with start() as s:
        await dc.wait_ready()
        yield s


async def test_dm_answered_as_a_reply_and_a_stranger_gets_nothing(
    served: Served, dc: DiscordAPI, fake: FakeModel
) -> None:
    fake.enqueue(Hang(0.8, then=Text("Hello **there**")))
    await dc.user_says(STRANGER, "hi")
    sent = await dc.user_says(OWNER, "hi")
    await dc.wait_for_sent(1)
    await until(lambda: served.status("discord").refused == 1)
    assert dc.texts() == ["Hello **there**"]
    assert str(dc.sent[0]["message_reference"]["message_id"]) == sent["id"]
    assert dc.typing and len(fake.chat_requests()) == 1


async def test_mentions_in_channels_threads_and_splitting(
    served: Served, dc: DiscordAPI, fake: FakeModel
) -> None:
    answer = "\n\n".join(f"Part {i} " + "word " * 250 for i in range(4))
    fake.enqueue(Text(answer), Text("in the thread"))
    await dc.user_says(FRIEND, "no mention, ignored", channel=CHANNEL, guild=True)
    await dc.user_says(FRIEND, "write a lot", channel=CHANNEL, guild=True, mention=True)
    await dc.wait_for_sent(3)
    # on a slow machine the answer streams as live drafts first: wait for the final edits
    await until(lambda: len(dc.sent) == 4 and not any("▍" in t for t in dc.texts()))
    assert all(len(t) <= 2000 for t in dc.texts()) and dc.sent[0]["channel"] == CHANNEL
    assert " ".join(dc.texts()).split() == answer.split()
    await dc.user_says(FRIEND, "thread question", channel=THREAD, guild=True, mention=True)
    await dc.wait_for_sent(5)
    assert dc.sent[-1]["channel"] == THREAD
    users = [m["content"] for m in fake.chat_requests()[1]["messages"] if m["role"] == "user"]
    assert users == ["thread question"]  # a thread is its own session
    assert len(fake.chat_requests()) == 2


async def test_channel_user_sessions_and_allowed_channels(
    start: Callable[..., Any], dc: DiscordAPI, fake: FakeModel
) -> None:
    async with start(sessions="channel_user", allowed_channels=CHANNEL) as served:
        await dc.wait_ready()
        fake.enqueue(Text("one"), Text("two"))
        await dc.user_says(OWNER, "mine", channel=CHANNEL, guild=True, mention=True)
        await dc.wait_for_sent(1)
        await dc.user_says(FRIEND, "yours", channel=CHANNEL, guild=True, mention=True)
        await dc.wait_for_sent(2)
        second = [m["content"] for m in fake.chat_requests()[1]["messages"] if m["role"] == "user"]
        assert second == ["yours"]
        assert {k for k, _ in served.gateway.workers}.__len__() >= 1
        await dc.user_says(
            FRIEND, "elsewhere", channel="920000000000000099", guild=True, mention=True
        )
        fake.enqueue(Text("three"))
        await dc.user_says(OWNER, "after", channel=CHANNEL, guild=True, mention=True)
        await dc.wait_for_sent(3)  # messages are handled in order: "elsewhere" was dropped
        assert served.status("discord").messages_in == 3 and len(fake.chat_requests()) == 3
        assert dc.texts()[-1] == "three"
        # the third reply is counted once its send returns
        await until(lambda: served.status("discord").messages_out == 3, what="3 counted out")
        metrics = (await served.client.get("/metrics")).text
        assert 'hermes_gateway_messages_total{direction="in",platform="discord"} 3.0' in metrics
        assert 'hermes_gateway_messages_total{direction="out",platform="discord"} 3.0' in metrics


async def test_rate_limits_are_waited_and_a_dropped_gateway_resumes(
    served: Served, dc: DiscordAPI, fake: FakeModel
) -> None:
    dc.fail(
        "messages",
        429,
        {"message": "You are being rate limited.", "retry_after": 0.05, "global": False},
        **{
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset-After": "0.05",
            "X-RateLimit-Bucket": "b1",
            "X-RateLimit-Scope": "user",
            "Via": "1.1 google",
        },
    )
    fake.enqueue(Text("after the limit"))
    await dc.user_says(OWNER, "hi")
    await dc.wait_for_sent(1)
    assert dc.calls.count("messages") == 2

    other = build_runtime(served.gateway.settings)  # no gateway running: a one-off REST send
    try:
        target = f"discord:{CHANNEL}"
        where = await GatewayDeliverer(other).deliver(
            target, Outbound(text="cron", scope="default")
        )
    finally:
        await other.aclose()
    assert where == target and dc.sent[-1]["channel"] == CHANNEL and dc.texts()[-1] == "cron"

    await dc.drop()
    await dc.wait_ready(2)
    fake.enqueue(Text("resumed"))
    await dc.user_says(OWNER, "still there?")
    await dc.wait_for_sent(3)
    assert dc.texts()[-1] == "resumed" and served.status("discord").connected


async def test_a_refused_token_is_reported(
    dc: DiscordAPI, serve_gateway: Callable[..., Any]
) -> None:
    env = {**dc_env(dc), "DISCORD_BOT_TOKEN": "wrong.token.value"}
    cfg = {"api_base": dc.base_url}
    async with serve_gateway(env, "discord", config=cfg, connected=False) as served:
        status = served.status("discord")
        await until(lambda: status.restarts >= 1)
        assert "DISCORD_BOT_TOKEN" in status.last_error and "wrong.token" not in status.last_error


async def test_a_slow_answer_is_one_message_edited_in_place(
    served: Served, dc: DiscordAPI, fake: FakeModel
) -> None:
    answer = "The tide follows the moon. " * 10
    interval = quicken(served.gateway, "discord")  # a tenth of the real pace
    fake.enqueue(Text(answer, chunk_chars=8, delay=8 * interval / (len(answer) / 8)))
    await dc.user_says(OWNER, "tides?")
    await until(lambda: dc.edits and "▍" not in dc.edits[-1]["content"], within=15)
    assert len(dc.sent) == 1
    assert dc.texts() == [answer.strip()]
    assert len(dc.sent[0]["first_content"]) < len(answer.strip())
    assert all(e["message"] == dc.sent[0]["id"] for e in dc.edits)
