"""`hermes setup gateway <platform>` stores the answers in .env (0600) and checks them by
connecting; `hermes gateway status` lists every platform."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from hermes.cli.main import app
from hermes.runtime import Runtime
from hermes.server.app import create_app
from tests.standins.twilio_api import TwilioAPI

from .conftest import write_config


@pytest.fixture
async def tw() -> AsyncIterator[TwilioAPI]:
    async with TwilioAPI() as api:
        yield api


async def invoke(args: list[str], text: str) -> object:
    # the command runs its own event loop (asyncio.run): give it a thread of its own while
    # the stand-in keeps serving on this one
    return await asyncio.to_thread(CliRunner().invoke, app, args, input=text)


async def test_setup_gateway_sms_saves_and_checks(tw: TwilioAPI, home: Path) -> None:
    write_config(home, {"gateway": {"sms": {"api_base": tw.base_url}}})
    answers = f"{tw.account_sid}\n{tw.auth_token}\n{tw.number}\n+15551230001\n"
    result = await invoke(["setup", "gateway", "sms"], answers)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert "connected fine" in result.output  # type: ignore[attr-defined]
    assert "/gateway/sms" in result.output  # type: ignore[attr-defined]
    env = (home / ".env").read_text(encoding="utf-8")
    assert f"TWILIO_AUTH_TOKEN={tw.auth_token}" in env and "SMS_ALLOWED_USERS=+15551230001" in env
    assert stat.S_IMODE((home / ".env").stat().st_mode) == 0o600
    assert tw.auth_token not in result.output  # type: ignore[attr-defined]

    again = await invoke(["setup", "gateway", "sms"], "\nwrong-token\n\n\n")
    assert again.exit_code == 1  # type: ignore[attr-defined]
    assert "TWILIO_AUTH_TOKEN" in again.output  # type: ignore[attr-defined]


def test_unknown_platform_and_status_listing(home: Path) -> None:
    bad = CliRunner().invoke(app, ["setup", "gateway", "myspace"])
    assert bad.exit_code == 2 and "myspace" in bad.output
    status = CliRunner().invoke(app, ["gateway", "status", "--json"])
    adapters = json.loads(status.output)["adapters"]
    assert {"whatsapp", "sms", "slack", "discord", "matrix"} <= set(adapters)
    assert not any(a["configured"] for a in adapters.values())


async def test_webhooks_of_platforms_not_set_up_are_404(runtime: Runtime) -> None:
    api = create_app(runtime, close_runtime=False)
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        for platform in ("whatsapp", "sms", "myspace"):
            r = await client.post(f"/gateway/{platform}", content=b"{}")
            assert r.status_code == 404 and platform in r.text
