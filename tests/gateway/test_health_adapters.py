"""SPEC §10: `/health` shows each messaging adapter (to the owner), while an anonymous caller
of a keyed server still gets only status, version and model_configured (SPEC §13)."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from hermes.gateway.runner import Gateway
from hermes.server.app import create_app
from tests.standins.telegram_api import TelegramBotAPI

KEY = "health-owner-key-0123456789"


async def _health(gateway: Gateway, headers: dict[str, str]) -> httpx.Response:
    api = create_app(gateway.runtime, close_runtime=False)
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        return await client.get("/health", headers=headers)


async def test_health_shows_each_adapter_on_an_open_server(
    tg: TelegramBotAPI, gateway: Gateway
) -> None:
    r = await _health(gateway, {})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok"
    assert body["adapters"]["telegram"]["connected"] is True


async def test_with_a_server_key_only_its_holder_sees_the_adapters(
    tg: TelegramBotAPI, gateway: Gateway
) -> None:
    gateway.runtime.settings.server.api_key = SecretStr(KEY)

    anonymous = await _health(gateway, {})
    assert anonymous.status_code == 200
    assert set(anonymous.json()) == {"status", "version", "model_configured"}
    wrong = await _health(gateway, {"Authorization": "Bearer not-the-key"})
    assert set(wrong.json()) == {"status", "version", "model_configured"}

    owner = await _health(gateway, {"Authorization": f"Bearer {KEY}"})
    assert owner.json()["adapters"]["telegram"]["connected"] is True
