"""Slack in Socket Mode through slack_sdk against the loopback stand-in: DMs and mentions,
threads as sessions, mrkdwn and its fallback, splitting, the working reaction, slash
commands, workspace and user allow-lists, rate limits, and reconnecting after a drop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from hermes.delivery import Outbound
from hermes.gateway.delivery import GatewayDeliverer
from hermes.gateway.platforms.slack import command_text, to_mrkdwn
from hermes.testing.fake_model import FakeModel, Hang, Text
from tests.standins.slack_api import BOT_USER, SlackAPI

from .conftest import Served, quicken, until

OWNER = "U0OWNER1"
FRIEND = "U0FRIEND"
STRANGER = "U0STRANGE"


@pytest.fixture
async def slack() -> AsyncIterator[SlackAPI]:
    async with SlackAPI() as api:
        yield api


def slack_env(slack: SlackAPI) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": slack.bot_token,
        "SLACK_APP_TOKEN": slack.app_token,
        "SLACK_ALLOWED_USERS": f"{OWNER},{FRIEND}",
        "HERMES_GATEWAY_OWNER": f"slack:{OWNER}",
    }


@pytest.fixture
async def served(slack: SlackAPI, serve_gateway: Callable[..., Any]) -> AsyncIterator[Served]:
    cfg = {"api_base": slack.base_url, "allowed_teams": "T0TEST"}
    async with serve_gateway(slack_env(slack), "slack", config=cfg) as s:
        await slack.wait_connected()
        yield s


async def test_dm_is_answered_in_mrkdwn_and_a_stranger_gets_nothing(
    served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    fake.enqueue(Text("**Hi** there, see [docs](https://x.test) & <this>"))
    await slack.dm(STRANGER, "hello")
    await slack.dm(OWNER, "hello")
    await slack.wait_for_sent(1)
    await until(lambda: served.status("slack").refused == 1)
    assert slack.texts() == ["*Hi* there, see <https://x.test|docs> &amp; &lt;this&gt;"]
    assert slack.sent[0]["channel"] == f"D{OWNER}" and "thread_ts" not in slack.sent[0]
    assert len(fake.chat_requests()) == 1 and len(slack.acks) == 2


async def test_mentions_answer_in_their_thread_and_each_thread_is_a_session(
    served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    fake.enqueue(Text("first thread"), Text("second thread"), Text("follow-up"))
    await slack.mention(FRIEND, "C0GENERAL", "question one", ts="1700000001.000001")
    await slack.wait_for_sent(1)
    await slack.mention(FRIEND, "C0GENERAL", "question two", ts="1700000002.000001")
    await slack.wait_for_sent(2)
    await slack.event(  # channel chatter: ignored
        {
            "type": "message",
            "channel": "C0GENERAL",
            "channel_type": "channel",
            "user": FRIEND,
            "text": "unrelated",
        }
    )
    await slack.event(  # no mention, but in a thread the bot answers in
        {
            "type": "message",
            "channel": "C0GENERAL",
            "channel_type": "channel",
            "user": FRIEND,
            "text": "and more?",
            "thread_ts": "1700000001.000001",
        }
    )
    await slack.wait_for_sent(3)
    threads = [m.get("thread_ts") for m in slack.sent]
    assert threads == ["1700000001.000001", "1700000002.000001", "1700000001.000001"]
    third = [m["content"] for m in fake.chat_requests()[2]["messages"] if m["role"] == "user"]
    assert third == ["question one", "and more?"]
    assert f"<@{BOT_USER}>" not in str(fake.chat_requests()[0])
    assert len(fake.chat_requests()) == 3  # the chatter, handled before, reached nobody


async def test_long_answers_split_at_4000_refused_mrkdwn_falls_back_and_429_is_retried(
    served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    answer = "\n\n".join(f"Part {i} " + "word " * 500 for i in range(3))
    slack.fail(
        "chat.postMessage", 429, {"ok": False, "error": "ratelimited"}, **{"Retry-After": "0"}
    )
    fake.enqueue(Text(answer))
    await slack.dm(OWNER, "long please")
    await slack.wait_for_sent(3)
    # on a loaded machine the turn can outlast the live-edit delay: then the messages are
    # drafts (with the cursor) until the final edits land
    await until(lambda: all("▍" not in t for t in slack.texts()), what="the final edits")
    assert all(len(t) <= 4000 for t in slack.texts())
    assert " ".join(slack.texts()).split() == answer.split()

    slack.fail("chat.postMessage", 200, {"ok": False, "error": "invalid_blocks"})
    fake.enqueue(Text("**plain** fallback"))
    await slack.dm(OWNER, "again")
    await slack.wait_for_sent(4)
    assert slack.sent[-1]["text"] == "**plain** fallback" and slack.sent[-1]["mrkdwn"] is False


async def test_working_reaction_slash_commands_and_workspace_allow_list(
    served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    fake.enqueue(Hang(1.0, then=Text("done")))
    await slack.dm(OWNER, "think hard", ts="1700000005.000001")
    await slack.wait_for_sent(1)
    await until(lambda: len(slack.reactions) == 2)
    assert [r[0] for r in slack.reactions] == ["reactions.add", "reactions.remove"]
    assert slack.reactions[0][1]["timestamp"] == "1700000005.000001"

    await slack.slash(OWNER, "C0GENERAL", "/hermes", "help")
    await slack.wait_for_sent(2)
    assert "/new" in slack.texts()[-1]
    await slack.slash(OWNER, "C0GENERAL", "/sethome")
    await slack.wait_for_sent(3)
    assert served.gateway.home == "slack:C0GENERAL"
    deliverer = GatewayDeliverer(served.gateway.runtime)
    where = await deliverer.deliver("slack", Outbound(text="cron says hi", scope="default"))
    assert where == "slack:C0GENERAL" and slack.sent[-1]["channel"] == "C0GENERAL"

    await slack.event(
        {"type": "message", "channel": "D0X", "channel_type": "im", "user": OWNER, "text": "hi"},
        team="T0OTHER",
    )
    fake.enqueue(Text("ok"))
    await slack.dm(OWNER, "from my workspace")  # handled after the other workspace's event
    await slack.wait_for_sent(5)
    assert len(fake.chat_requests()) == 2
    assert fake.chat_requests()[1]["messages"][-1]["content"] == "from my workspace"


async def test_every_gateway_command_and_alias_works_as_a_slash_command(
    served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    """Slack routes slash commands itself, from the gateway's one command list: the aliases
    the other platforms accept (/reset, /q, /start) work here too."""
    await slack.slash(OWNER, "C0GENERAL", "/hermes", "reset")
    await slack.wait_for_sent(1)
    assert slack.texts()[-1].startswith("✨ New conversation")
    await slack.slash(OWNER, "C0GENERAL", "/start")
    await slack.wait_for_sent(2)
    assert "/new" in slack.texts()[-1] and "/steer" in slack.texts()[-1]
    fake.enqueue(Text("queued answer"))
    await slack.slash(OWNER, "C0GENERAL", "/hermes", "q what is new")
    await slack.wait_for_sent(3)
    assert slack.texts()[-1] == "queued answer"
    assert fake.chat_requests()[0]["messages"][-1]["content"] == "what is new"


async def test_reconnects_after_the_socket_drops(
    served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    await slack.drop()
    await slack.wait_connected(2)
    fake.enqueue(Text("still here"))
    await slack.dm(OWNER, "are you there?")
    await slack.wait_for_sent(1)
    assert slack.texts() == ["still here"] and served.status("slack").connected


async def test_a_bad_bot_token_is_reported(
    slack: SlackAPI, serve_gateway: Callable[..., Any]
) -> None:
    env = {**slack_env(slack), "SLACK_BOT_TOKEN": "xoxb-wrong-value"}
    cfg = {"api_base": slack.base_url}
    async with serve_gateway(env, "slack", config=cfg, connected=False) as served:
        status = served.status("slack")
        await until(lambda: status.restarts >= 1)
        assert "SLACK_BOT_TOKEN" in status.last_error and "xoxb-wrong" not in status.last_error


def test_formatting_and_command_mapping() -> None:
    assert to_mrkdwn("# T\n*it* `a<b` ~~s~~") == "*T*\n_it_ `a&lt;b` ~s~"
    assert command_text("/hermes", "new") == "/new"
    assert command_text("/stop", "") == "/stop"
    assert command_text("/hermes", "what is up") == "what is up"
    assert command_text("/hermes", "reset") == "/reset"
    assert command_text("/q", "later") == "/q later"
    assert command_text("/hermes", "start") == "/start"


async def test_a_slow_answer_is_one_message_updated_in_place(
    served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    answer = "The tide follows the moon. " * 10
    interval = quicken(served.gateway, "slack")  # a tenth of the real pace
    fake.enqueue(Text(answer, chunk_chars=8, delay=8 * interval / (len(answer) / 8)))
    await slack.dm(OWNER, "tides?")
    await until(lambda: slack.updates and "▍" not in slack.updates[-1]["text"], within=15)
    assert len(slack.sent) == 1
    assert slack.texts() == [answer.strip()]  # chat.update applied: the chat shows the answer
    assert len(slack.sent[0]["first_text"]) < len(answer.strip())
    assert all(u["ts"] == slack.sent[0]["ts"] for u in slack.updates)
