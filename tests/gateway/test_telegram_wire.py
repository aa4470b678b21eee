"""Telegram specifics: splitting, the Markdown fallback, 429 back-off, files, typing, crashes."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from hermes.cli.main import app
from hermes.gateway.platforms.telegram_format import split_text, to_html
from hermes.gateway.runner import Gateway
from hermes.server.app import create_app
from hermes.testing.fake_model import FakeModel, Hang, Text
from tests.standins.telegram_api import TelegramBotAPI, html_problem

from .conftest import OWNER, texts, until


def test_split_prefers_paragraphs_then_lines_and_never_exceeds_the_limit() -> None:
    paragraphs = [f"p{i} " + "x" * 1500 for i in range(6)]
    pieces = split_text("\n\n".join(paragraphs))
    assert all(len(p) <= 4096 for p in pieces)
    assert pieces[0] == "\n\n".join(paragraphs[:2])
    assert split_text("y" * 9000) == ["y" * 4096, "y" * 4096, "y" * 808]


def test_markdown_becomes_valid_telegram_html() -> None:
    html = to_html(
        "# Title\n**bold** and *it* `a<b>` [link](https://x.test/?a=1&b=2)\n```\nif a < b:\n```"
    )
    assert html_problem(html) is None
    assert "<b>Title</b>" in html and "<b>bold</b>" in html and "<i>it</i>" in html
    assert "<code>a&lt;b&gt;</code>" in html and '<a href="https://x.test/?a=1&amp;b=2">' in html


async def test_long_answers_are_split_and_sent_in_order(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    answer = "\n\n".join(f"Paragraph {i}. " + "word " * 300 for i in range(8))
    fake.enqueue(Text(answer, chunk_chars=4000))
    await tg.user_says(OWNER, "write a lot")
    await tg.wait_for_sent(4)
    # on a slow machine the answer streams as live drafts first: wait for the final edits
    await until(
        lambda: len(tg.sent) == len(split_text(answer)) and not any("▍" in t for t in texts(tg))
    )
    assert all(len(t) <= 4096 for t in texts(tg))
    assert texts(tg)[0].startswith("Paragraph 0.")
    assert " ".join(texts(tg)).replace("\n", " ").split() == answer.replace("\n", " ").split()


async def test_rejected_entities_fall_back_to_plain_text(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    tg.reject_html_containing = "<b>"
    fake.enqueue(Text("This is **important**"))
    await tg.user_says(OWNER, "hi")
    await tg.wait_for_sent(1)
    assert tg.sent[0]["text"] == "This is **important**"
    assert "parse_mode" not in tg.sent[0]
    assert tg.state.calls.count("sendMessage") == 2


async def test_429_waits_retry_after_then_delivers(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    tg.fail("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    fake.enqueue(Text("after the flood"))
    await tg.user_says(OWNER, "hi")
    await tg.wait_for_sent(1, within=10)
    assert texts(tg) == ["after the flood"]
    assert tg.state.calls.count("sendMessage") == 2


async def test_photos_and_documents_are_saved_and_described(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("nice photo"), Text("got the file"))
    await tg.user_says(OWNER, "look", photo=b"\xff\xd8fake-jpeg")
    await tg.wait_for_sent(1)
    first = fake.chat_requests()[0]["messages"][-1]["content"]
    assert first.startswith("look") and "photo" in first and "saved at" in first
    path = first.split("saved at ")[1].rstrip("]")
    assert await asyncio.to_thread(Path(path).read_bytes) == b"\xff\xd8fake-jpeg"
    await tg.user_says(OWNER, None, document=("notes.txt", b"hello file", "text/plain"))
    await tg.wait_for_sent(2)
    second = fake.chat_requests()[1]["messages"][-1]["content"]
    assert "'notes.txt'" in second and "text/plain" in second


async def test_typing_indicator_while_working(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Hang(1.0, then=Text("done")))
    await tg.user_says(OWNER, "think")
    await tg.wait_for_sent(1)
    assert tg.state.actions and tg.state.actions[0]["action"] == "typing"


async def test_a_crashing_adapter_is_retried_while_the_api_keeps_serving(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    runtime = gateway.runtime
    await tg.go_down()  # the Bot API starts failing: getUpdates raises, the adapter restarts
    await until(lambda: gateway.status["telegram"].restarts >= 2)
    status = gateway.status["telegram"]
    assert not status.connected and status.last_error

    api = create_app(runtime, close_runtime=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://t") as c:
        fake.enqueue(Text("the API still answers"))
        r = await c.post(
            "/v1/chat/completions",
            json={"model": "hermes", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert r.status_code == 200
        assert r.json()["choices"][0]["message"]["content"] == "the API still answers"
        health = (await c.get("/health/detailed")).json()
        assert health["parts"]["gateway"]["status"] == "degraded"
        assert health["parts"]["gateway"]["adapters"]["telegram"]["last_error"]
        assert health["reasons"]["gateway"].startswith("not connected: telegram ")
        assert "hermes gateway status" in health["parts"]["gateway"]["fix"]

    gateway._write_status(force=True)
    report = CliRunner().invoke(app, ["gateway", "status"])
    assert report.exit_code == 0 and "telegram" in report.output and "last error" in report.output

    tg.come_back()  # back: the supervisor reconnects and messages flow again
    await until(lambda: gateway.status["telegram"].connected)
    fake.enqueue(Text("I'm back"))
    await tg.user_says(OWNER, "hello?")
    await tg.wait_for_sent(1)
    assert texts(tg) == ["I'm back"]
    status_json = CliRunner().invoke(app, ["gateway", "status", "--json"])
    assert '"running": true' in status_json.output


async def test_the_bot_token_never_reaches_logs_or_the_status_file(
    tg: TelegramBotAPI, gateway: Gateway, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await tg.go_down()
    await until(lambda: gateway.status["telegram"].restarts >= 1)
    gateway._write_status(force=True)
    status = await asyncio.to_thread((home / "gateway" / "status.json").read_text)
    token = tg.state.token
    assert token not in status
    assert token not in caplog.text
    assert "getUpdates" in caplog.text or "getMe" in caplog.text  # the requests were logged


async def test_a_refused_token_is_reported_and_retried_slowly(
    tg: TelegramBotAPI, fake: FakeModel, gw_runtime: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes.config.settings import load_settings
    from hermes.runtime import build_runtime

    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "999:wrong")
    runtime = build_runtime(load_settings())
    gw = runtime.services.get(Gateway)
    gw.backoff = (0.05, 0.1, 0.2)
    await gw.start()
    try:
        await until(lambda: gw.status["telegram"].restarts >= 2)
        status = gw.status["telegram"]
        assert not status.connected
        assert "refused the bot token" in (status.last_error or "")
        assert "999:wrong" not in (status.last_error or "")
    finally:
        await gw.stop()
        await runtime.aclose()
