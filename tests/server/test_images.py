"""Images over the API: `image_url` (chat) and `input_image` (responses) parts reach a vision
model as image parts; without `model.vision` they are 400 `vision_not_enabled`; bad and
oversize images are refused; the transcript keeps the text and a reference, never the bytes."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from hermes.config.settings import Settings
from hermes.scopes import scope_root
from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.media import a_png, data_url

from .conftest import Api, open_api
from .test_basics import assert_envelope


def image_part(url: str, detail: str | None = None) -> dict[str, Any]:
    image: dict[str, Any] = {"url": url}
    if detail is not None:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


@pytest.fixture
def vision(settings: Settings) -> Settings:
    settings.model.vision = True
    settings.model.image_max_bytes = 2000
    settings.model.images_per_message = 2
    settings.model.image_turns = 1
    return settings


@pytest.fixture
async def vapi(vision: Settings) -> Any:
    async with open_api(vision) as a:
        yield a


async def test_without_vision_an_image_is_a_400_naming_the_setting(
    api: Api, fake: FakeModel
) -> None:
    parts = [{"type": "text", "text": "what is this?"}, image_part(data_url(a_png()))]
    r = await api.chat(parts)
    assert_envelope(r, 400, "vision_not_enabled", "messages[0].content[1]")
    assert "model.vision" in r.json()["error"]["message"]
    r = await api.client.post(
        "/v1/responses",
        json={
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": "https://x/a.png"}],
                }
            ]
        },
    )
    assert_envelope(r, 400, "vision_not_enabled", "input[0].content[0]")
    assert fake.chat_requests() == []


async def test_a_data_url_image_reaches_the_model_and_the_transcript_keeps_a_reference(
    vapi: Api, fake: FakeModel, vision: Settings
) -> None:
    png = a_png()
    fake.enqueue(Text("A red square."))
    parts = [
        {"type": "text", "text": "what colour is the flamingo sticker?"},
        image_part(data_url(png), "low"),
    ]
    r = await vapi.chat(parts, headers={"X-Hermes-Session-Id": "pics"})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "A red square."
    assert fake.images() == [data_url(png)]
    user = fake.chat_requests()[-1]["messages"][-1]
    assert user["content"][0] == {"type": "text", "text": "what colour is the flamingo sticker?"}

    stored = vapi.runtime.store.get_messages("default", "pics")
    [asked] = [m for m in stored if m.role == "user"]
    assert asked.content is not None and "flamingo sticker" in asked.content
    assert base64.b64encode(png).decode()[:20] not in asked.content
    saved = list((scope_root(vision.home, "default") / "images").iterdir())
    assert [p.read_bytes() for p in saved] == [png]
    assert saved[0].name in asked.content

    # session_search finds the caption; what it shows holds the reference, not the bytes
    fake.enqueue(ToolCalls([("session_search", {"query": "flamingo"})]), Text("found it"))
    assert (await vapi.chat("what did I ask?", headers={"X-Hermes-Session-Id": "s2"})).is_success
    [found] = [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    assert "flamingo sticker" in found
    assert base64.b64encode(png).decode()[:20] not in found


async def test_only_the_last_turns_images_are_sent_again(vapi: Api, fake: FakeModel) -> None:
    """`model.image_turns: 1`: the next turn sees the old image as the text `[image]`."""
    fake.enqueue(Text("red"), Text("then blue"))
    session = {"X-Hermes-Session-Id": "two"}
    first = [{"type": "text", "text": "one"}, image_part(data_url(a_png()))]
    assert (await vapi.chat(first, headers=session)).status_code == 200
    second = [{"type": "text", "text": "two"}, image_part(data_url(a_png(rgb=(0, 0, 255))))]
    assert (await vapi.chat(second, headers=session)).status_code == 200
    messages = fake.chat_requests()[-1]["messages"]
    old = [m for m in messages if m["role"] == "user"][0]
    assert old["content"] == "one\n[image]"
    assert fake.images() == [data_url(a_png(rgb=(0, 0, 255)))]


async def test_http_urls_pass_through_and_stateless_history_images_are_shown(
    vapi: Api, fake: FakeModel, vision: Settings
) -> None:
    fake.enqueue(Text("ok"))
    body = {
        "model": "hermes",
        "messages": [
            {"role": "user", "content": [image_part("https://example.com/cat.jpg")]},
            {"role": "assistant", "content": "a cat"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "and this?"}, image_part(data_url(a_png()))],
            },
        ],
    }
    vision.model.image_turns = 2
    r = await vapi.client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    assert fake.images() == ["https://example.com/cat.jpg", data_url(a_png())]
    # a stateless turn stores nothing, its images included
    assert not (scope_root(vision.home, "default") / "images").exists()


async def test_responses_input_image_reaches_the_model(vapi: Api, fake: FakeModel) -> None:
    fake.enqueue(Text("a tiny image"))
    r = await vapi.client.post(
        "/v1/responses",
        json={
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "describe"},
                        {"type": "input_image", "image_url": data_url(a_png()), "detail": "auto"},
                    ],
                }
            ]
        },
    )
    assert r.status_code == 200, r.text
    assert r.json()["output"][-1]["content"][0]["text"] == "a tiny image"
    assert fake.images() == [data_url(a_png())]


@pytest.mark.parametrize(
    "part, status, code",
    [
        (image_part("data:image/png;base64,%%%notbase64"), 400, "invalid_image_url"),
        (image_part(data_url(b"GIF-but-not-really")), 400, "invalid_image_url"),
        (image_part("ftp://example.com/a.png"), 400, "invalid_image_url"),
        (image_part("data:text/plain;base64,aGk="), 400, "invalid_image_url"),
        (image_part(data_url(a_png(200, 200, (1, 2, 3)) + bytes(3000))), 413, "image_too_large"),
        (image_part("https://x/y.png", "huge"), 400, "invalid_content_part"),
        ({"type": "image_url", "image_url": {}}, 400, "invalid_image_url"),
    ],
)
async def test_bad_images_are_refused_naming_the_part(
    vapi: Api, fake: FakeModel, part: dict[str, Any], status: int, code: str
) -> None:
    r = await vapi.chat([{"type": "text", "text": "look"}, part])
    assert r.status_code == status, r.text
    assert r.json()["error"]["code"] == code
    assert r.json()["error"]["param"].startswith("messages[0].content[1]")
    assert fake.chat_requests() == []


async def test_too_many_images_in_one_message_and_images_outside_user_messages(
    vapi: Api, fake: FakeModel
) -> None:
    three = [
        image_part("https://x/1.png"),
        image_part("https://x/2.png"),
        image_part("https://x/3.png"),
    ]
    r = await vapi.chat(three)
    assert_envelope(r, 400, "too_many_images", "messages[0].content[2]")
    assert "model.images_per_message" in r.json()["error"]["message"]
    body = {
        "model": "hermes",
        "messages": [
            {"role": "system", "content": [image_part("https://x/1.png")]},
            {"role": "user", "content": "hi"},
        ],
    }
    r = await vapi.client.post("/v1/chat/completions", json=body)
    assert_envelope(r, 400, "unsupported_content_type", "messages[0].content[0]")
    r = await vapi.client.post(
        "/v1/responses",
        json={
            "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file-1"}]}]
        },
    )
    assert_envelope(r, 400, "unsupported_content_type", "input[0].content[0]")
    assert fake.chat_requests() == []


async def test_one_scope_never_sees_another_scopes_image(
    vapi: Api, fake: FakeModel, vision: Settings
) -> None:
    """A marker names an image by its hash; it is looked up in the asking scope's own folder,
    so a user who learns another's hash (or types a marker) gets `[image]`, not the image."""
    fake.enqueue(Text("seen"), Text("nothing there"))
    png = a_png(rgb=(9, 9, 9))
    r = await vapi.chat([image_part(data_url(png))], headers={"X-Hermes-Session-Id": "own"})
    assert r.status_code == 200
    [saved] = (scope_root(vision.home, "default") / "images").iterdir()
    vision.server.session_scopes = ["user"]
    r = await vapi.chat(
        f"look\n[image: {saved.name}]", headers={"X-Hermes-Session-Id": "user:mallory"}
    )
    assert r.status_code == 200, r.text
    assert fake.images() == []
    assert fake.chat_requests()[-1]["messages"][-1]["content"] == "look\n[image]"


def models_asked(fake: FakeModel) -> int:
    return len([r for r in fake.records if r.method == "GET" and r.path.endswith("/models")])


@pytest.mark.parametrize("sees", [True, False])
async def test_unset_vision_is_taken_from_the_endpoints_model_list(
    api: Api, fake: FakeModel, settings: Settings, sees: bool
) -> None:
    assert settings.model.vision is None
    settings.model.context_length = 64000  # so only the vision question asks GET /models
    fake.vision = sees
    fake.enqueue(Text("ok"), Text("ok"), Text("ok") if sees else Text("text"))
    for _ in range(2):
        r = await api.chat([{"type": "text", "text": "see?"}, image_part("https://x.test/a.png")])
        if sees:
            assert r.status_code == 200, r.text
            assert fake.images() == ["https://x.test/a.png"]
        else:
            assert_envelope(r, 400, "vision_not_enabled")
    assert models_asked(fake) == 1  # asked once; the answer is kept
    assert (await api.chat("hello")).status_code == 200
    assert models_asked(fake) == 1  # a text-only request never asks


async def test_a_large_image_is_taken_and_stored_whole(
    vapi: Api, fake: FakeModel, vision: Settings
) -> None:
    """A body over 256 KB is parsed off the event loop; the image arrives byte for byte."""
    vision.model.image_max_bytes = 1_000_000
    big = a_png(rgb=(5, 5, 5)) + bytes(400_000)
    fake.enqueue(Text("big"))
    r = await vapi.client.post(
        "/v1/responses",
        json={
            "input": [
                {"role": "user", "content": [{"type": "input_image", "image_url": data_url(big)}]}
            ]
        },
    )
    assert r.status_code == 200, r.text
    assert fake.images() == [data_url(big)]
    [saved] = (scope_root(vision.home, "default") / "images").iterdir()
    assert saved.read_bytes() == big


async def test_a_scope_keeps_at_most_images_kept_images_on_disk(
    vapi: Api, fake: FakeModel, vision: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`model.images_kept: 2`: a third image removes the least recently sent one, whose
    marker then reaches the model as `[image]`; an image sent again counts as recent, even
    when every turn falls in one tick of the clock (a file system's times are coarse: the
    order once came out wrong under load)."""
    monkeypatch.setattr("hermes.agent.images.time.time_ns", lambda: 1_700_000_000_000_000_000)
    vision.model.images_kept = 2
    vision.model.image_turns = 10
    fake.default = Text("seen")
    session = {"X-Hermes-Session-Id": "album"}
    red, green, blue = (a_png(rgb=c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255)))
    folder = scope_root(vision.home, "default") / "images"
    for png in (red, green, red, blue):  # red again: green is now the oldest
        r = await vapi.chat([image_part(data_url(png))], headers=session)
        assert r.status_code == 200, r.text
    kept = sorted(p.read_bytes() for p in folder.iterdir())
    assert kept == sorted([red, blue])
    r = await vapi.chat("what did you see?", headers=session)
    assert r.status_code == 200, r.text
    assert sorted(fake.images()) == sorted([data_url(red)] * 2 + [data_url(blue)])
    users = [m for m in fake.chat_requests()[-1]["messages"] if m["role"] == "user"]
    assert users[1]["content"] == "[image]"  # green's file is gone
