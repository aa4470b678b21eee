"""`hermes serve` as a real process: the gateway starts with the API, answers on Telegram,
shows in `hermes gateway status` and `/health`, and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import httpx

from hermes import tls
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.telegram_api import TelegramBotAPI

from ..conftest import run_cli
from .conftest import OWNER, texts


async def test_serve_runs_the_gateway_next_to_the_api(
    tg: TelegramBotAPI, fake: FakeModel, gw_env: dict[str, str]
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hermes",
        "serve",
        "--port",
        "0",
        stderr=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        env=dict(os.environ),
    )
    try:
        assert proc.stderr is not None
        url = None
        while url is None:
            line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
            assert line, "hermes serve exited before listening"
            if "listening on " in line:
                url = line.split("listening on ")[1].split()[0]
        fake.enqueue(Text("hello from serve"))
        await tg.user_says(OWNER, "are you there?")
        await tg.wait_for_sent(1, within=20)
        assert texts(tg) == ["hello from serve"]
        async with httpx.AsyncClient(verify=tls.httpx_context()) as client:
            health = (await client.get(f"{url}/health/detailed")).json()
        assert health["parts"]["gateway"]["adapters"]["telegram"]["connected"] is True
        status = await asyncio.to_thread(run_cli, "gateway", "status", "--json")
        report = json.loads(status.stdout)
        assert report["running"] is True and report["adapters"]["telegram"]["connected"]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 20)
    assert proc.returncode == 0
    status = await asyncio.to_thread(run_cli, "gateway", "status", "--json")
    assert json.loads(status.stdout)["running"] is False
