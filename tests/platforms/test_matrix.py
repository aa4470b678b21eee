"""Matrix through matrix-nio against a real Synapse on loopback: invitations from allowed
users only, rooms as chats, replies and threads as sessions, HTML with a plain body,
encrypted rooms refused with a log line, reconnecting after the homeserver connection
fails, and cron delivery to a room."""

from __future__ import annotations

import itertools
import json
import logging
import stat
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from hermes import tls
from hermes.config.settings import load_settings
from hermes.delivery import Outbound
from hermes.gateway.delivery import GatewayDeliverer
from hermes.gateway.platforms.matrix import SESSION_DOCUMENT, room_and_thread, to_matrix_html
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text
from tests.standins.synapse import Person, Synapse

from .conftest import Served, until

_names = itertools.count(1)
BOT_PASSWORD = "bot-password-123"


@pytest.fixture
async def people(synapse: Synapse) -> AsyncIterator[dict[str, Any]]:
    n = next(_names)
    bot = synapse.register(f"hermes{n}", BOT_PASSWORD)
    owner, stranger = Person(synapse, f"owner{n}"), Person(synapse, f"stranger{n}")
    try:
        yield {"bot": bot, "owner": owner, "stranger": stranger}
    finally:
        await owner.http.aclose()
        await stranger.http.aclose()


def matrix_env(synapse: Synapse, people: dict[str, Any]) -> dict[str, str]:
    return {
        "MATRIX_HOMESERVER": synapse.url,
        "MATRIX_USER_ID": people["bot"],
        "MATRIX_PASSWORD": BOT_PASSWORD,
        "MATRIX_ALLOWED_USERS": people["owner"].user_id,
    }


@pytest.fixture
async def served(
    synapse: Synapse, people: dict[str, Any], serve_gateway: Callable[..., Any]
) -> AsyncIterator[Served]:
    async with serve_gateway(matrix_env(synapse, people), "matrix") as s:
        yield s


async def replies(person: Person, room: str, bot: str, n: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    async def enough() -> bool:
        found[:] = await person.messages(room, bot)
        return len(found) >= n

    deadline_checks = 0
    while not await enough():
        deadline_checks += 1
        assert deadline_checks < 1000, f"the bot sent {len(found)} of {n} messages"
        await until(lambda: True)  # yield to the loop between polls
    return found


async def membership(person: Person, room: str, user: str, state: str = "join") -> None:
    """Wait (deadline) until `user`'s membership of `room` is `state`."""
    for _ in range(1000):
        if (await person.members(room)).get(user) == state:
            return
        await until(lambda: True)
    raise AssertionError(f"{user} never reached {state!r} in {room}")


async def test_invites_rooms_replies_and_threads(
    served: Served, people: dict[str, Any], fake: FakeModel
) -> None:
    owner, stranger, bot = people["owner"], people["stranger"], people["bot"]
    room = await owner.create_room([bot])
    stranger_room = await stranger.create_room([bot])
    await membership(owner, room, bot)
    await membership(stranger, stranger_room, bot, "leave")

    fake.enqueue(Text("**Hello** in the room"), Text("in the thread"))
    question = await owner.say(room, "hi bot")
    [answer] = await replies(owner, room, bot, 1)
    content = answer["content"]
    assert content["body"] == "**Hello** in the room"
    assert content["formatted_body"] == "<b>Hello</b> in the room"
    assert content["m.relates_to"]["m.in_reply_to"]["event_id"] == question

    await owner.say(
        room,
        "in a thread",
        rel_type="m.thread",
        event_id=question,
        is_falling_back=True,
        **{"m.in_reply_to": {"event_id": question}},
    )
    second = (await replies(owner, room, bot, 2))[1]["content"]["m.relates_to"]
    assert second["rel_type"] == "m.thread" and second["event_id"] == question
    users = [m["content"] for m in fake.chat_requests()[1]["messages"] if m["role"] == "user"]
    assert users == ["in a thread"]  # a thread is its own session
    assert len(fake.chat_requests()) == 2


async def test_encrypted_rooms_are_refused_with_a_log_line(
    served: Served, people: dict[str, Any], fake: FakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    owner, bot = people["owner"], people["bot"]
    room = await owner.create_room([bot], encrypted=True)
    await membership(owner, room, bot)
    caplog.set_level(logging.WARNING, "hermes.gateway.platforms.matrix")
    await owner.send_raw(
        room,
        "m.room.encrypted",
        {
            "algorithm": "m.megolm.v1.aes-sha2",
            "ciphertext": "AwgAEn…",
            "device_id": "DEV",
            "sender_key": "key",
            "session_id": "sess",
        },
    )
    await until(lambda: "end-to-end encrypted" in caplog.text)
    assert fake.chat_requests() == []


async def test_cron_delivers_to_a_room_and_the_adapter_reconnects(
    served: Served, people: dict[str, Any], fake: FakeModel
) -> None:
    owner, bot = people["owner"], people["bot"]
    room = await owner.create_room([bot])
    await membership(owner, room, bot)
    deliverer = GatewayDeliverer(served.gateway.runtime)
    where = await deliverer.deliver(
        f"matrix:{room}", Outbound(text="daily digest", scope="default")
    )
    assert where.startswith("matrix:!")
    assert (await replies(owner, room, bot, 1))[0]["content"]["body"] == "daily digest"
    # without a running gateway (e.g. `hermes cron run`), a one-off adapter signs in and sends
    other = build_runtime(served.gateway.settings)
    try:
        await GatewayDeliverer(other).deliver(
            f"matrix:{room}", Outbound(text="from the CLI", scope="default")
        )
    finally:
        await other.aclose()
    assert (await replies(owner, room, bot, 2))[1]["content"]["body"] == "from the CLI"

    # the bot's session is logged out under it: the running sync fails, the supervisor
    # restarts the adapter, which signs in again
    adapter = served.gateway.adapters["matrix"]
    session_file = served.gateway.settings.home / "gateway" / "matrix_session.json"
    saved = json.loads(session_file.read_text(encoding="utf-8"))
    assert saved["access_token"] == adapter.client.access_token
    assert stat.S_IMODE(session_file.stat().st_mode) == 0o600
    async with httpx.AsyncClient(verify=tls.httpx_context()) as http:
        r = await http.post(
            f"{owner.server.url}/_matrix/client/v3/logout",
            headers={"Authorization": f"Bearer {adapter.client.access_token}"},
        )
        assert r.status_code == 200
    fake.enqueue(Text("back again"))
    status = served.status("matrix")
    await until(lambda: status.restarts >= 1 and status.connected, within=20)
    await owner.say(room, "still there?")
    bodies = [m["content"]["body"] for m in await replies(owner, room, bot, 3)]
    assert bodies[-1] == "back again" and len(bodies) == 3
    # the logged-out session was replaced by a new sign-in, which was saved for next time
    fresh = json.loads(session_file.read_text(encoding="utf-8"))["access_token"]
    assert fresh != saved["access_token"]
    assert fresh == served.gateway.adapters["matrix"].client.access_token


def test_room_ids_survive_target_splitting_and_html_keeps_pre() -> None:
    assert room_and_thread("!abc", "localhost") == ("!abc:localhost", None)
    assert room_and_thread("!abc", "localhost:$ev") == ("!abc:localhost", "$ev")
    assert room_and_thread("!abc:localhost", "$ev") == ("!abc:localhost", "$ev")
    assert to_matrix_html("a\nb\n```\nx\ny\n```") == "a<br>b<br><pre>x\ny</pre>"


async def test_a_paired_user_can_invite_the_bot(served: Served, people: dict[str, Any]) -> None:
    from hermes.gateway.access import PairingStore

    stranger, bot = people["stranger"], people["bot"]
    before = await stranger.create_room([bot])
    await membership(stranger, before, bot, "leave")  # not allowed (yet): refused
    pairing = PairingStore(served.gateway.settings.home)
    offer = pairing.offer(f"matrix:{stranger.user_id}", None)
    assert offer is not None
    pairing.approve(offer.code)  # `hermes gateway pair approve`, while the gateway runs
    after = await stranger.create_room([bot])
    await membership(stranger, after, bot)


async def test_on_postgresql_the_session_is_shared_not_a_file(
    synapse: Synapse,
    people: dict[str, Any],
    serve_gateway: Callable[..., Any],
    pg_url: str,
) -> None:
    env = {**matrix_env(synapse, people), "HERMES_DATABASE_URL": pg_url}
    async with serve_gateway(env, "matrix") as served:
        runtime = served.gateway.runtime
        documents = runtime.store.documents
        assert documents is not None
        saved = json.loads(documents.read_document("default", SESSION_DOCUMENT) or "{}")
        assert saved["access_token"] == served.gateway.adapters["matrix"].client.access_token
        home = served.gateway.settings.home
        assert not (home / "gateway" / "matrix_session.json").exists()
        # another replica (its own home, same database) reuses the device: no new sign-in
        other_home = home.parent / "replica-b"
        other_home.mkdir()
        other = build_runtime(load_settings(other_home))
        try:
            owner, bot = people["owner"], people["bot"]
            room = await owner.create_room([bot])
            await membership(owner, room, bot)
            await GatewayDeliverer(other).deliver(
                f"matrix:{room}", Outbound(text="from replica b", scope="default")
            )
        finally:
            await other.aclose()
        assert (await replies(owner, room, bot, 1))[0]["content"]["body"] == "from replica b"
        after = json.loads(documents.read_document("default", SESSION_DOCUMENT) or "{}")
        assert after == saved
        assert not (other_home / "gateway" / "matrix_session.json").exists()
