"""Telegram end to end: python-telegram-bot ↔ loopback Bot API ↔ gateway ↔ agent ↔ fake model."""

from __future__ import annotations

from pathlib import Path

from hermes.config.settings import Settings
from hermes.gateway.runner import Gateway
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.telegram_api import TelegramBotAPI

from .conftest import OWNER, until


async def test_owner_message_gets_an_answer_in_the_owner_scope(
    tg: TelegramBotAPI, fake: FakeModel, gateway: Gateway
) -> None:
    fake.enqueue(Text("Hello **Ada**!"))
    await tg.user_says(OWNER, "hi there")
    await tg.wait_for_sent(1)
    sent = tg.sent[0]
    assert sent["text"] == "Hello <b>Ada</b>!"
    assert sent["parse_mode"] == "HTML"
    assert int(sent["chat_id"]) == OWNER
    assert fake.chat_requests()[0]["messages"][-1]["content"] == "hi there"
    session = gateway.runtime.store.get_session("default", f"telegram:{OWNER}")
    assert session is not None


async def test_a_skill_runs_as_a_slash_command_like_in_the_terminal(
    tg: TelegramBotAPI, fake: FakeModel, home: Path, gw_settings: Settings
) -> None:
    skill = home / "skills" / "writing" / "haiku"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: haiku\ndescription: Answer in a haiku\n---\n"
        "Answer in exactly three lines of 5, 7 and 5 syllables.\n",
        encoding="utf-8",
    )
    runtime = build_runtime(gw_settings)
    gw = runtime.services.get(Gateway)
    await gw.start()
    try:
        await until(lambda: gw.status["telegram"].connected)
        fake.enqueue(Text("Autumn moonlight"), Text("plain answer"))
        await tg.user_says(OWNER, "/haiku the sea at night")
        await tg.wait_for_sent(1)
        sent = fake.chat_requests()[0]["messages"]
        systems = [m["content"] for m in sent if m["role"] == "system"]
        assert any("5, 7 and 5 syllables" in s and '"haiku" skill' in s for s in systems)
        assert sent[-1] == {"role": "user", "content": "the sea at night"}
        # an unknown /word is not a skill: it reaches the model as the user wrote it
        await tg.user_says(OWNER, "/nosuchskill hello")
        await tg.wait_for_sent(2)
        later = fake.chat_requests()[1]["messages"]
        assert later[-1]["content"] == "/nosuchskill hello"
        assert not any("5, 7 and 5" in str(m["content"]) for m in later if m["role"] == "system")
        # /skills lists what this chat can run, without a model call
        await tg.user_says(OWNER, "/skills")
        await tg.wait_for_sent(3)
        assert "/haiku - Answer in a haiku" in tg.sent[2]["text"]
        assert len(fake.chat_requests()) == 2
        stored = runtime.store.get_session("default", f"telegram:{OWNER}")
        assert stored is not None
    finally:
        await gw.stop()
        await runtime.aclose()
