"""Photos and voice notes beyond Telegram: WhatsApp images and voice notes (Graph media ids),
Slack shared files (`url_private_download` with the bot token), Discord attachments (the
CDN), Mattermost files (the files API) and Matrix m.image / m.audio (the homeserver's media
repository, real Synapse) reach a vision model as images and the speech-to-text endpoint as recordings, through
each platform's stand-in."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from hermes.testing.fake_model import FakeModel, Text
from tests.media import a_png, a_recording, data_url
from tests.standins.discord_api import DiscordAPI
from tests.standins.mattermost_api import Mattermost
from tests.standins.slack_api import SlackAPI
from tests.standins.synapse import Synapse
from tests.standins.whatsapp_api import WhatsAppCloudAPI

from .conftest import Served
from .test_discord import OWNER as DC_OWNER
from .test_discord import dc_env
from .test_matrix import matrix_env, membership, people, replies  # noqa: F401 (a fixture)
from .test_mattermost import OWNER as MM_OWNER
from .test_mattermost import mm, mm_env  # noqa: F401 (a fixture)
from .test_slack import OWNER as SLACK_OWNER
from .test_slack import slack_env
from .test_whatsapp import OWNER as WA_OWNER
from .test_whatsapp import says, wa_env

VISION = {"HERMES_VISION": "true"}


@pytest.fixture
async def wa() -> AsyncIterator[WhatsAppCloudAPI]:
    async with WhatsAppCloudAPI() as api:
        yield api


@pytest.fixture
async def slack() -> AsyncIterator[SlackAPI]:
    async with SlackAPI() as api:
        yield api


@pytest.fixture
async def wa_served(
    wa: WhatsAppCloudAPI, serve_gateway: Callable[..., Any]
) -> AsyncIterator[Served]:
    env = {**wa_env(wa), **VISION}
    async with serve_gateway(env, "whatsapp", config={"api_base": wa.base_url}) as s:
        yield s


@pytest.fixture
async def slack_served(slack: SlackAPI, serve_gateway: Callable[..., Any]) -> AsyncIterator[Served]:
    env = {**slack_env(slack), **VISION}
    async with serve_gateway(env, "slack", config={"api_base": slack.base_url}) as s:
        await slack.wait_connected()
        yield s


async def test_whatsapp_image_reaches_the_model_with_its_caption(
    wa_served: Served, wa: WhatsAppCloudAPI, fake: FakeModel
) -> None:
    png = a_png(rgb=(1, 2, 250))
    wa.media["IMG1"] = (png, "image/png")
    fake.enqueue(Text("A blue square."))
    image = {"type": "image", "image": {"id": "IMG1", "mime_type": "image/png", "caption": "hue?"}}
    assert await says(wa_served, wa, WA_OWNER, "", message=image) == 200
    await wa.wait_for_sent(1)
    assert wa.texts() == ["A blue square."]
    assert fake.images() == [data_url(png)]
    stored = wa_served.gateway.runtime.store.get_messages("default", f"whatsapp:{WA_OWNER}")
    assert any(m.role == "user" and (m.content or "").startswith("hue?") for m in stored)


async def test_whatsapp_voice_note_is_transcribed(
    wa_served: Served, wa: WhatsAppCloudAPI, fake: FakeModel
) -> None:
    wa.media["AUD1"] = (a_recording(), "audio/ogg; codecs=opus")
    fake.transcripts.append("book a table for two")
    fake.enqueue(Text("Booked."))
    voice = {"type": "audio", "audio": {"id": "AUD1", "mime_type": "audio/ogg", "voice": True}}
    assert await says(wa_served, wa, WA_OWNER, "", message=voice) == 200
    await wa.wait_for_sent(1)
    assert fake.audio and fake.audio[0]["bytes"] > 1000
    assert fake.chat_requests()[-1]["messages"][-1] == {
        "role": "user",
        "content": "book a table for two",
    }


async def test_slack_shared_image_reaches_the_model(
    slack_served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    png = a_png(rgb=(250, 250, 0))
    fake.enqueue(Text("Yellow."))
    shared = slack.share(png, "shot.png", "image/png")
    await slack.dm(SLACK_OWNER, "what colour?", subtype="file_share", files=[shared])
    await slack.wait_for_sent(1)
    assert slack.texts() == ["Yellow."]
    assert slack.downloads == [shared["id"]]
    assert fake.images() == [data_url(png)]
    first = fake.chat_requests()[-1]["messages"][-1]["content"][0]
    assert first == {"type": "text", "text": "what colour?"}


async def test_slack_voice_clip_is_transcribed_and_files_go_only_to_slack_hosts(
    slack_served: Served, slack: SlackAPI, fake: FakeModel
) -> None:
    fake.transcripts.append("summarise my day")
    fake.enqueue(Text("Busy."), Text("noted"))
    clip = slack.share(a_recording(), "audio_message.webm", "audio/webm", subtype="slack_audio")
    await slack.dm(SLACK_OWNER, "", subtype="file_share", files=[clip])
    await slack.wait_for_sent(1)
    assert fake.chat_requests()[-1]["messages"][-1]["content"] == "summarise my day"
    # a file URL on another host never gets the bot token: the file is not fetched
    elsewhere = {
        **slack.share(b"x", "a.txt", "text/plain"),
        "url_private_download": "http://127.0.0.2:9/a",
    }
    await slack.dm(SLACK_OWNER, "and this", subtype="file_share", files=[elsewhere])
    await slack.wait_for_sent(2)
    assert fake.chat_requests()[-1]["messages"][-1]["content"] == "and this"
    assert slack.downloads == [clip["id"]]


@pytest.fixture
async def dc() -> AsyncIterator[DiscordAPI]:
    async with DiscordAPI() as api:
        yield api


@pytest.fixture
async def dc_served(dc: DiscordAPI, serve_gateway: Callable[..., Any]) -> AsyncIterator[Served]:
    env = {**dc_env(dc), **VISION}
    config = {"api_base": dc.base_url, "guild_ready_timeout": 0.2}
    async with serve_gateway(env, "discord", config=config) as s:
        await dc.wait_ready()
        yield s


async def test_discord_image_attachment_reaches_the_model(
    dc_served: Served, dc: DiscordAPI, fake: FakeModel
) -> None:
    png = a_png(rgb=(0, 128, 128))
    fake.enqueue(Text("Teal."))
    await dc.user_says(DC_OWNER, "colour?", files=[(png, "pic.png", "image/png")])
    await dc.wait_for_sent(1)
    assert dc.texts() == ["Teal."]
    assert fake.images() == [data_url(png)]
    assert len(dc.downloads) == 1


async def test_discord_voice_message_is_transcribed(
    dc_served: Served, dc: DiscordAPI, fake: FakeModel
) -> None:
    fake.transcripts.append("what is on my calendar")
    fake.enqueue(Text("Nothing today."))
    await dc.user_says(DC_OWNER, "", voice=a_recording())
    await dc.wait_for_sent(1)
    assert fake.audio and fake.audio[0]["filename"].endswith("voice-message.ogg")
    assert fake.chat_requests()[-1]["messages"][-1]["content"] == "what is on my calendar"


async def test_matrix_image_and_audio_reach_the_model(
    synapse: Synapse,
    people: dict[str, Any],  # noqa: F811 (the fixture of test_matrix)
    serve_gateway: Callable[..., Any],
    fake: FakeModel,
) -> None:
    env = {**matrix_env(synapse, people), **VISION}
    async with serve_gateway(env, "matrix"):
        owner, bot = people["owner"], people["bot"]
        room = await owner.create_room([bot])
        await membership(owner, room, bot)
        png = a_png(rgb=(128, 0, 128))
        fake.transcripts.append("remind me at five")
        fake.enqueue(Text("Purple."), Text("Reminder set."))
        await owner.send_media(room, "m.image", png, "image/png", "p.png", caption="which hue?")
        await replies(owner, room, bot, 1)
        assert fake.images() == [data_url(png)]
        assert fake.chat_requests()[-1]["messages"][-1]["content"][0]["text"] == "which hue?"
        await owner.send_media(room, "m.audio", a_recording(), "audio/ogg", "voice.ogg")
        await replies(owner, room, bot, 2)
        assert fake.chat_requests()[-1]["messages"][-1]["content"] == "remind me at five"


async def test_matrix_voice_note_gets_a_spoken_reply_after_the_text(
    synapse: Synapse,
    people: dict[str, Any],  # noqa: F811 (the fixture of test_matrix)
    serve_gateway: Callable[..., Any],
    fake: FakeModel,
) -> None:
    env = {**matrix_env(synapse, people), "HERMES_TTS_MODE": "voice_in"}
    async with serve_gateway(env, "matrix"):
        owner, bot = people["owner"], people["bot"]
        room = await owner.create_room([bot])
        await membership(owner, room, bot)
        fake.transcripts.append("say hello")
        fake.enqueue(Text("Hello!"))
        await owner.send_media(room, "m.audio", a_recording(), "audio/ogg", "voice.ogg")
        text, voice = await replies(owner, room, bot, 2)
        assert text["content"]["body"] == "Hello!"
        assert voice["content"]["msgtype"] == "m.audio"
        assert "org.matrix.msc3245.voice" in voice["content"]
        assert fake.speech[0]["input"] == "Hello!"
        r = await owner.http.get(
            f"{synapse.url}/_matrix/client/v1/media/download/"
            + voice["content"]["url"].removeprefix("mxc://")
        )
        assert r.status_code == 200 and r.content.startswith(b"RIFF")


async def test_whatsapp_voice_note_gets_a_spoken_reply(
    wa: WhatsAppCloudAPI, serve_gateway: Callable[..., Any], fake: FakeModel
) -> None:
    env = {**wa_env(wa), "HERMES_TTS_MODE": "voice_in"}
    async with serve_gateway(env, "whatsapp", config={"api_base": wa.base_url}) as served:
        wa.media["AUD2"] = (a_recording(), "audio/ogg")
        fake.transcripts.append("good morning")
        fake.enqueue(Text("Morning!"))
        voice = {"type": "audio", "audio": {"id": "AUD2", "mime_type": "audio/ogg", "voice": True}}
        assert await says(served, wa, WA_OWNER, "", message=voice) == 200
        await wa.wait_for_sent(2)
        text, audio = wa.sent
        assert text["text"]["body"] == "Morning!" and audio["type"] == "audio"
        data, mime = wa.media[audio["audio"]["id"]]
        assert mime == "audio/ogg" and data.startswith(b"RIFF")


async def test_mattermost_image_and_voice_recording_reach_the_model(
    mm: Mattermost,  # noqa: F811 (the fixture of test_mattermost)
    serve_gateway: Callable[..., Any],
    fake: FakeModel,
) -> None:
    async with serve_gateway({**mm_env(mm), **VISION}, "mattermost"):
        await mm.wait_connected()
        png = a_png(rgb=(240, 120, 0))
        fake.transcripts.append("order more coffee")
        fake.enqueue(Text("Orange."), Text("Ordered."))
        await mm.user_says(MM_OWNER, "tone?", file_ids=[mm.add_file(png, "c.png", "image/png")])
        await mm.wait_for_posts(1)
        assert fake.images() == [data_url(png)]
        recording = mm.add_file(a_recording(), "voice.m4a", "audio/mp4")
        await mm.user_says(MM_OWNER, "", file_ids=[recording])
        await mm.wait_for_posts(2)
        assert fake.chat_requests()[-1]["messages"][-1]["content"] == "order more coffee"
