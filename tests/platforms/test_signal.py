"""Signal through a stand-in of signal-cli's HTTP daemon: direct messages and mentions in
groups answered (a group is one session), strangers refused, quotes, typing, the event stream
resumed after a break without losing a message, and cron delivery to a number."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from hermes.delivery import Outbound
from hermes.gateway.delivery import GatewayDeliverer
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.signal_cli_api import SignalCli

from .conftest import Served, until

OWNER = "+15550001111"
FRIEND = "+15550002222"
STRANGER = "+15550009999"
GROUP = "aGVybWVzLXRlc3QtZ3JvdXAtaWQtMDAwMDAwMDAwMA=="


@pytest.fixture
async def signal() -> AsyncIterator[SignalCli]:
    async with SignalCli() as api:
        yield api


def signal_env(api: SignalCli) -> dict[str, str]:
    return {
        "SIGNAL_API_BASE": api.base_url,
        "SIGNAL_NUMBER": api.number,
        "SIGNAL_ALLOWED_USERS": f"{OWNER}, {FRIEND}",
        "HERMES_GATEWAY_OWNER": f"signal:{OWNER}",
    }


@pytest.fixture
async def served(signal: SignalCli, serve_gateway: Callable[..., Any]) -> AsyncIterator[Served]:
    async with serve_gateway(signal_env(signal), "signal") as s:
        yield s


async def test_a_direct_message_is_answered_with_a_quote(
    signal: SignalCli, served: Served, fake: FakeModel
) -> None:
    fake.enqueue(Text("Hello from Hermes"))
    asked = await signal.user_says(OWNER, "hi there")
    [sent] = await signal.wait_for_sent(1)
    assert sent["recipient"] == [OWNER]
    assert sent["message"] == "Hello from Hermes"
    assert sent["quoteTimestamp"] == asked and sent["quoteAuthor"] == OWNER
    assert fake.chat_requests()[0]["messages"][-1]["content"] == "hi there"
    store = served.gateway.runtime.store
    assert store.get_session("default", f"signal:{OWNER}") is not None


async def test_strangers_and_receipts_get_nothing(
    signal: SignalCli, served: Served, fake: FakeModel
) -> None:
    await signal.receipt(OWNER)
    await signal.user_says(STRANGER, "let me in")
    await until(lambda: served.status("signal").refused == 1)
    fake.enqueue(Text("only you"))
    await signal.user_says(OWNER, "ping")
    await signal.wait_for_sent(1)
    assert [m["recipient"] for m in signal.sent] == [[OWNER]]
    assert len(fake.chat_requests()) == 1


async def test_in_a_group_only_mentions_are_answered_and_the_group_is_one_session(
    signal: SignalCli, served: Served, fake: FakeModel
) -> None:
    await signal.user_says(FRIEND, "chatting among ourselves", group=GROUP)
    fake.enqueue(Text("first"), Text("second"))
    await signal.user_says(FRIEND, "what is 2+2?", group=GROUP, mention=True)
    await signal.wait_for_sent(1)
    await signal.user_says(OWNER, "and 3+3?", group=GROUP, mention=True)
    await signal.wait_for_sent(2)
    assert [m["groupId"] for m in signal.sent] == [GROUP, GROUP]
    assert "recipient" not in signal.sent[0]
    first = fake.chat_requests()[0]["messages"]
    assert first[-1]["content"] == "what is 2+2?"  # the mention itself is not in the text
    assert len(fake.chat_requests()) == 2


async def test_the_event_stream_resumes_after_a_break_without_losing_messages(
    signal: SignalCli, served: Served, fake: FakeModel
) -> None:
    fake.enqueue(Text("one"), Text("two"))
    await signal.user_says(OWNER, "first")
    await signal.wait_for_sent(1)
    await signal.drop_streams()
    await signal.user_says(OWNER, "written while the stream was down")
    await signal.wait_for_sent(2, within=15)
    assert signal.connections >= 2
    users = [m["content"] for m in fake.chat_requests()[1]["messages"] if m["role"] == "user"]
    assert users[-1] == "written while the stream was down"
    assert len(fake.chat_requests()) == 2  # the first message was not answered twice


async def test_cron_delivers_to_a_number_and_refusals_are_not_retried(
    signal: SignalCli, served: Served
) -> None:
    deliverer = GatewayDeliverer(served.gateway.runtime)
    where = await deliverer.deliver(
        f"signal:{FRIEND}", Outbound(text="daily digest", scope="default")
    )
    assert where == f"signal:{FRIEND}"
    assert signal.sent[-1]["message"] == "daily digest"
    signal.fail_rpc("send", -32602, "Invalid number: +1")
    from hermes.delivery import DeliveryError

    with pytest.raises(DeliveryError) as refused:
        await deliverer.deliver("signal:+1555", Outbound(text="x", scope="default"))
    assert not refused.value.retryable
    assert "Invalid number" in str(refused.value)


def test_signal_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.config.settings import load_settings
    from hermes.gateway.platforms import spec

    monkeypatch.setenv("SIGNAL_API_BASE", "http://127.0.0.1:8080")
    monkeypatch.setenv("SIGNAL_NUMBER", "+15550000001")
    monkeypatch.setenv("SIGNAL_ALLOWED_USERS", f"{OWNER},{FRIEND}")
    settings = load_settings()
    platform = spec("signal")
    assert platform.configured(settings)
    assert platform.allowed_senders(settings) == {OWNER, FRIEND}
