"""Cron answers and `send_message` reach chats: home, a platform's home, a chat, with retries
and the outcome recorded per run."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from hermes.cli.main import app
from hermes.cron.jobs import JobInputError, check_deliver
from hermes.cron.ticker import Scheduler
from hermes.gateway.runner import Gateway
from hermes.server.app import create_app
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import FRIEND, OWNER, texts, until

runner = CliRunner()


def test_deliver_accepts_home_and_the_real_platforms() -> None:
    assert check_deliver("home") == "home"
    assert check_deliver("telegram, telegram:42:7,email:ada@example.com") == (
        "telegram,telegram:42:7,email:ada@example.com"
    )
    with pytest.raises(JobInputError):
        check_deliver("myspace:1")


async def _run_job(gateway: Gateway, deliver: str) -> dict:
    api = create_app(gateway.runtime, close_runtime=False)
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        r = await c.post(
            "/api/jobs",
            json={
                "name": "brief",
                "schedule": "every 1h",
                "prompt": "brief me",
                "deliver": deliver,
            },
        )
        assert r.status_code == 201, r.text
        job_id = r.json()["job"]["id"]
        scheduler = gateway.runtime.services.get(Scheduler)
        scheduler.retry_delays = (0.05,)
        _job, task = await scheduler.start_run("default", job_id)
        await task
        runs = (await c.get(f"/api/jobs/{job_id}/runs")).json()["runs"]
        job = (await c.get(f"/api/jobs/{job_id}")).json()["job"]
    return {"runs": runs, "job": job}


async def test_cron_delivers_to_home_after_sethome(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway, home: Path
) -> None:
    await tg.user_says(OWNER, "/sethome")
    await tg.wait_for_sent(1)
    fake.enqueue(Text("Your morning brief."))
    outcome = await _run_job(gateway, "home")
    await tg.wait_for_sent(2)
    assert int(tg.sent[1]["chat_id"]) == OWNER
    assert "Your morning brief." in texts(tg)[1]
    run = outcome["runs"][0]
    assert run["delivery"]["status"] == "delivered"
    assert run["delivery"]["delivered"] == ["home"]
    assert outcome["job"]["last_status"] == "ok"


async def test_a_failed_delivery_is_retried_and_recorded(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    gateway.adapters["telegram"].retry_base = 0.01  # type: ignore[attr-defined]
    tg.fail("sendMessage", 500, "Internal Server Error", times=20)
    fake.enqueue(Text("never arrives"))
    outcome = await _run_job(gateway, f"telegram:{FRIEND}")
    run = outcome["runs"][0]
    assert run["delivery"]["status"] == "failed"
    assert "attempt" in run["delivery"]["failed"][0]
    assert outcome["job"]["last_status"] == "delivery_failed"
    listing = runner.invoke(app, ["cron", "list"])
    assert "delivery_failed" in listing.output and "last error" in listing.output


async def test_delivery_without_a_home_says_how_to_set_one(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("brief"))
    outcome = await _run_job(gateway, "telegram")
    assert "/sethome" in outcome["runs"][0]["delivery"]["failed"][0]


async def test_send_message_tool_is_owner_only(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(
        ToolCalls(("send_message", {"target": f"telegram:{FRIEND}", "message": "hi friend"})),
        Text("sent it"),
    )
    await tg.user_says(OWNER, "tell my friend hi")
    # the owner's answer may first show as a tool-progress draft (a slow turn), then edited
    expected = [(FRIEND, "hi friend"), (OWNER, "sent it")]
    await until(
        lambda: [(int(m["chat_id"]), m["text"]) for m in tg.sent] == expected,
        what="the message to the friend, then the answer to the owner",
    )
    # the friend (another scope) has no send_message at all
    fake.enqueue(Text("no tools for you"))
    await tg.user_says(FRIEND, "message the owner")
    await tg.wait_for_sent(3)
    names = {t["function"]["name"] for t in fake.chat_requests()[-1].get("tools", [])}
    assert "send_message" not in names


def test_cron_add_warns_when_no_server_runs(home: Path) -> None:
    result = runner.invoke(app, ["cron", "add", "every 1h", "hello", "--deliver", "home"])
    assert result.exit_code == 0, result.output
    assert "no `hermes serve` is running" in result.output


def test_targets_resolve_to_platform_chat_and_thread() -> None:
    from hermes.delivery import split_target as _split

    assert _split("telegram:-100123:7") == ("telegram", "-100123", "7")
    assert _split("telegram") == ("telegram", None, None)
    assert _split("email:ada@example.test") == ("email", "ada@example.test", None)
    assert _split("email:ada@example.test:3f2a9c") == ("email", "ada@example.test", None)
    # Matrix room ids hold colons of their own, a server port included; threads are `$` events
    assert _split("matrix:!r:example.org") == ("matrix", "!r:example.org", None)
    assert _split("matrix:!r:example.org:8448") == ("matrix", "!r:example.org:8448", None)
    assert _split("matrix:!r:example.org:8448:$ev") == ("matrix", "!r:example.org:8448", "$ev")
    for target in ("matrix:!r:example.org:8448", "matrix:!r:example.org:8448:$ev"):
        assert check_deliver(target) == target


async def test_a_job_made_in_a_chat_delivers_back_to_that_chat(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    # no home chat is set: before, `origin` meant home, and this delivery failed
    fake.enqueue(
        ToolCalls([("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "brief"})]),
        Text("Scheduled."),
    )
    await tg.user_says(OWNER, "brief me every hour")
    # (a slow turn shows a tool-progress draft first, edited into the answer)
    await until(lambda: texts(tg) == ["Scheduled."], what="the answer")
    api = create_app(gateway.runtime, close_runtime=False)
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        [job] = (await c.get("/api/jobs")).json()["jobs"]
        job = (await c.get(f"/api/jobs/{job['id']}")).json()["job"]
    assert job["deliver"] == "origin"
    assert job["origin"]["platform"] == "telegram"
    assert job["origin"]["chat_id"] == str(OWNER)
    scheduler = gateway.runtime.services.get(Scheduler)
    fake.enqueue(Text("Your hourly brief."))
    _job, task = await scheduler.start_run("default", job["id"])
    await task
    await tg.wait_for_sent(2)
    assert int(tg.sent[1]["chat_id"]) == OWNER
    assert "Your hourly brief." in texts(tg)[1]
