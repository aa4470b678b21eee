"""Mattermost through a stand-in of its API v4: direct messages answered, channel mentions
answered in a thread (its own session), strangers refused, the answer edited in place as it
streams, 429s waited out, a bad token reported, and cron delivery to a channel."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from hermes.config.settings import load_settings
from hermes.delivery import Outbound
from hermes.gateway.delivery import GatewayDeliverer
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.mattermost_api import BOT_ID, TOKEN, Mattermost

from .conftest import Served, quicken, until

OWNER = "owneruserid0000000000000000"
STRANGER = "strangerid00000000000000000"


@pytest.fixture
async def mm() -> AsyncIterator[Mattermost]:
    async with Mattermost() as api:
        yield api


def mm_env(api: Mattermost, token: str = TOKEN) -> dict[str, str]:
    return {
        "MATTERMOST_URL": api.url,
        "MATTERMOST_TOKEN": token,
        "MATTERMOST_ALLOWED_USERS": OWNER,
        "HERMES_GATEWAY_OWNER": f"mattermost:{OWNER}",
    }


@pytest.fixture
async def served(mm: Mattermost, serve_gateway: Callable[..., Any]) -> AsyncIterator[Served]:
    async with serve_gateway(mm_env(mm), "mattermost") as s:
        await mm.wait_connected()  # "connected" is the REST sign-in; posts need the websocket
        yield s


async def test_a_direct_message_is_answered(
    mm: Mattermost, served: Served, fake: FakeModel
) -> None:
    fake.enqueue(Text("Hello **there**"))
    await mm.user_says(OWNER, "hi")
    [post] = await mm.wait_for_posts(1)
    assert post["channel_id"] == "dm-channel" and post["root_id"] == ""
    assert post["message"] == "Hello **there**"
    assert fake.chat_requests()[0]["messages"][-1]["content"] == "hi"


async def test_in_a_channel_a_mention_is_answered_in_its_thread_and_strangers_get_nothing(
    mm: Mattermost, served: Served, fake: FakeModel
) -> None:
    await mm.user_says(OWNER, "not for the bot", channel="town", direct=False)
    await mm.user_says(STRANGER, "let me in")
    await until(lambda: served.status("mattermost").refused == 1)
    fake.enqueue(Text("four"), Text("six"))
    asked = await mm.user_says(OWNER, "what is 2+2?", channel="town", direct=False, mention=True)
    await mm.wait_for_posts(1)
    assert mm.posts[0]["channel_id"] == "town" and mm.posts[0]["root_id"] == asked
    assert fake.chat_requests()[0]["messages"][-1]["content"] == "what is 2+2?"
    # a reply in that thread continues the thread's session, mention or not
    await mm.user_says(OWNER, "and 3+3?", channel="town", direct=False, root_id=asked, mention=True)
    await mm.wait_for_posts(2)
    users = [m["content"] for m in fake.chat_requests()[1]["messages"] if m["role"] == "user"]
    assert users == ["what is 2+2?", "and 3+3?"]


async def test_a_slow_answer_is_one_post_edited_in_place(
    mm: Mattermost, served: Served, fake: FakeModel
) -> None:
    answer = "Tides follow the moon. " * 12
    interval = quicken(served.gateway, "mattermost")  # a tenth of the real pace
    fake.enqueue(Text(answer, chunk_chars=8, delay=8 * interval / (len(answer) / 8)))
    await mm.user_says(OWNER, "tides?")
    await until(lambda: mm.edits and "▍" not in mm.edits[-1]["message"], within=15)
    assert len(mm.posts) == 1
    assert mm.posts[0]["message"] == answer.strip()
    assert len(mm.posts[0]["first_message"]) < len(answer.strip())


async def test_rate_limits_are_waited_out(mm: Mattermost, served: Served, fake: FakeModel) -> None:
    mm.fail_route("posts", 429, reset=0.2)
    fake.enqueue(Text("after the limit"))
    await mm.user_says(OWNER, "hi")
    [post] = await mm.wait_for_posts(1)
    assert post["message"] == "after the limit"


async def test_a_bad_token_is_reported_and_not_hammered(
    mm: Mattermost, serve_gateway: Callable[..., Any]
) -> None:
    async with serve_gateway(mm_env(mm, token="wrong"), "mattermost", connected=False) as s:
        await until(lambda: s.status("mattermost").last_error)
        assert "refused the token" in s.status("mattermost").last_error


async def test_cron_delivers_to_a_channel(
    mm: Mattermost, serve_gateway: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # as `hermes cron run` does: no gateway runs in this process, a one-off adapter sends
    for key, value in mm_env(mm).items():
        monkeypatch.setenv(key, value)
    runtime = build_runtime(load_settings())
    try:
        deliverer = GatewayDeliverer(runtime)
        where = await deliverer.deliver(
            "mattermost:town", Outbound(text="daily digest", scope="default")
        )
    finally:
        await runtime.aclose()
    assert where == "mattermost:town"
    assert mm.posts[-1]["message"] == "daily digest"
    assert mm.posts[-1]["user_id"] == BOT_ID
