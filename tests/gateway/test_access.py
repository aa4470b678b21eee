"""Who may talk: allow-lists, pairing (one-time, expiring, rate-limited), scope isolation."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from hermes.cli.main import app
from hermes.gateway.access import CODE_TTL, PairingError, PairingStore
from hermes.gateway.runner import Gateway
from hermes.store.base import DEFAULT_SCOPE
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import FRIEND, OWNER, STRANGER, texts, until, write_config

runner = CliRunner()


async def test_a_stranger_gets_nothing_no_model_call_and_no_transcript(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    await tg.user_says(STRANGER, "let me in")
    await until(lambda: gateway.status["telegram"].refused == 1)
    fake.enqueue(Text("hello owner"))
    await tg.user_says(OWNER, "ping")  # processed after the stranger's message
    await tg.wait_for_sent(1)
    assert texts(tg) == ["hello owner"]
    assert len(fake.chat_requests()) == 1
    sessions = gateway.runtime.store.list_sessions(f"user:telegram:{STRANGER}")
    assert list(sessions) == []


async def test_pairing_code_is_approved_from_the_cli(
    tg: TelegramBotAPI, fake: FakeModel, gw_env: dict[str, str], home: Path, gw_runtime: object
) -> None:
    write_config(home, "gateway:\n  pairing: true\n")
    from hermes.config.settings import load_settings
    from hermes.runtime import build_runtime

    runtime = build_runtime(load_settings())
    gw = runtime.services.get(Gateway)
    await gw.start()
    try:
        await until(lambda: gw.status["telegram"].connected)
        await tg.user_says(STRANGER, "hello?")
        await tg.wait_for_sent(1)
        text = texts(tg)[0]
        code = text.split("hermes gateway pair ")[1].split()[0]
        assert len(code) == 8
        assert fake.chat_requests() == []
        # a second message within the resend window gets no second code (rate limit)
        await tg.user_says(STRANGER, "hello??")
        await until(lambda: gw.status["telegram"].refused == 2)
        assert len(tg.sent) == 1

        listing = runner.invoke(app, ["gateway", "pairing"])
        assert code in listing.output and f"telegram:{STRANGER}" in listing.output
        bad = runner.invoke(app, ["gateway", "pair", "WRONG123"])
        assert bad.exit_code == 1 and "no pending pairing code" in bad.output
        ok = runner.invoke(app, ["gateway", "pair", code.lower()])
        assert ok.exit_code == 0, ok.output
        assert f"telegram:{STRANGER}" in ok.output
        again = runner.invoke(app, ["gateway", "pair", code])
        assert again.exit_code == 1  # one-time

        fake.enqueue(Text("welcome"))
        await tg.user_says(STRANGER, "now?")
        await tg.wait_for_sent(2)
        assert texts(tg)[1] == "welcome"
        # the paired stranger has their own scope, not the owner's
        assert runtime.store.get_session(f"user:telegram:{STRANGER}", f"telegram:{STRANGER}")
        assert runtime.store.get_session(DEFAULT_SCOPE, f"telegram:{STRANGER}") is None
    finally:
        await gw.stop()
        await runtime.aclose()


def test_codes_expire_after_an_hour_and_are_capped(home: Path) -> None:
    now = [1000.0]
    store = PairingStore(home, clock=lambda: now[0])
    offer = store.offer("telegram:1", "A")
    assert offer is not None and offer.fresh
    assert store.offer("telegram:1", "A") is None  # too soon to repeat
    now[0] += CODE_TTL + 1
    try:
        store.approve(offer.code)
    except PairingError as exc:
        assert "older than an hour" in str(exc)
    else:
        raise AssertionError("an expired code was accepted")
    codes = {store.offer(f"telegram:{i}", None) for i in range(100, 140)}
    assert len({c for c in codes if c is not None}) == 20  # MAX_PENDING


async def test_two_platform_users_have_isolated_scopes(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("noted, owner"))
    await tg.user_says(OWNER, "my secret is tangerine")
    await tg.wait_for_sent(1)
    fake.enqueue(Text("hello friend"))
    await tg.user_says(FRIEND, "what is the owner's secret?")
    await tg.wait_for_sent(2)
    friend_request = fake.chat_requests()[1]
    assert "tangerine" not in str(friend_request["messages"])
    store = gateway.runtime.store
    assert store.get_session(DEFAULT_SCOPE, f"telegram:{OWNER}") is not None
    assert store.get_session(DEFAULT_SCOPE, f"telegram:{FRIEND}") is None
    assert store.get_session(f"user:telegram:{FRIEND}", f"telegram:{FRIEND}") is not None
    # end users never get the owner's dangerous tools
    tools = {t["function"]["name"] for t in friend_request.get("tools", [])}
    assert not tools & {"terminal", "write_file", "patch", "delegate_task", "send_message"}
