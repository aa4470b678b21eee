"""A bot belongs to one profile (SPEC §16): in the one `hermes serve` for every profile, a
Telegram bot configured in profile alpha's own `.env` answers as alpha (its SOUL.md, its
model) and keeps the chat in alpha's store (its state.db, or its schema of a shared
PostgreSQL database); the default profile, which has no bot, never sees it. Positive
controls as in the scope tests: alpha does have the conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hermes.config.settings import load_settings
from hermes.profiles import create, profile_settings
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from hermes.server.profiles import ProfileRouter
from hermes.store.opener import open_store
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, texts

pytestmark = pytest.mark.usefixtures("on_each_backend")

ALPHA_SOUL = "You are Alpha, the gardening assistant."


def alpha_with_the_bot(home: Path, tg: TelegramBotAPI) -> None:
    alpha = create(home, "alpha").home
    bot = {
        "HERMES_API_KEY": "alpha-key-0123456789abcdef",
        "TELEGRAM_BOT_TOKEN": tg.state.token,
        "TELEGRAM_API_BASE": tg.base_url,
        "TELEGRAM_ALLOWED_USERS": str(OWNER),
        "HERMES_GATEWAY_OWNER": f"telegram:{OWNER}",
    }
    (alpha / ".env").write_text("".join(f"{k}={v}\n" for k, v in bot.items()), encoding="utf-8")
    config = {"model": {"name": "alpha-model", "max_retries": 0}}
    (alpha / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (alpha / "SOUL.md").write_text(ALPHA_SOUL + "\n", encoding="utf-8")


def drop_alpha_schema(url: str) -> None:
    """On PostgreSQL each test empties `public`; alpha's schema is dropped here."""
    import psycopg

    from hermes.config.database import profile_schema

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{profile_schema("alpha")}" CASCADE')


async def test_a_profiles_bot_answers_as_that_profile_and_keeps_the_chat_there(
    home: Path,
    model_env: dict[str, str],
    tg: TelegramBotAPI,
    fake: FakeModel,
    on_each_backend: str,
) -> None:
    if on_each_backend.startswith("postgresql"):
        drop_alpha_schema(on_each_backend)
    alpha_with_the_bot(home, tg)
    settings = load_settings()
    settings.model.max_retries = 0
    router = ProfileRouter(home, None, settings, lambda s: create_app(build_runtime(s)))
    app = create_app(build_runtime(settings), daemons=[router.daemon()])
    router.default_app = app
    fake.enqueue(Text("Water the ferns on Sunday."))
    async with app.router.lifespan_context(app):
        assert router.served() == ["alpha"]
        await tg.user_says(OWNER, "when do the ferns get water?")
        await tg.wait_for_sent(1)
    assert texts(tg) == ["Water the ferns on Sunday."]
    [asked] = fake.chat_requests()
    assert asked["model"] == "alpha-model"
    assert ALPHA_SOUL in json.dumps(asked["messages"][0])

    alpha = profile_settings(home, "alpha")
    alpha_store = open_store(alpha.database_url, home=alpha.home)
    default_store = open_store(settings.database_url, home=settings.home)
    try:
        key = f"telegram:{OWNER}"
        kept = [m.content for m in alpha_store.get_messages("default", key)]
        assert "when do the ferns get water?" in kept
        assert default_store.get_messages("default", key) == []
    finally:
        alpha_store.close()
        default_store.close()
