"""Where the agent tells the provider what happened outside a turn: a session ending (`/new`
in the terminal chat, leaving it, a session deleted over the API) and the built-in memory
tool changing the notes. Seen from the Honcho stand-in: what it was sent."""

from __future__ import annotations

import asyncio

from hermes.testing.fake_model import FakeModel, Text, ToolCalls
from tests.conftest import chat_in_pty
from tests.memory.providers.conftest import make_settings, settle
from tests.memory.providers.honcho_api import HonchoAPI
from tests.server.conftest import chat_body, open_api, wait_until

NOTE = "Favourite tea: oolong"


def notes_about(honcho: HonchoAPI, peer: str) -> list[str]:
    """The conclusions the assistant peer holds about `peer` (the mirrored notes)."""
    return [
        c["content"]
        for c in honcho.conclusions
        if c["observer_id"] == "hermes" and c["observed_id"] == peer
    ]


def memory_call(**args: str) -> ToolCalls:
    return ToolCalls([("memory", {"target": "user", **args})])


async def test_memory_tool_writes_are_mirrored_to_the_provider(
    honcho: HonchoAPI, fake: FakeModel
) -> None:
    fake.enqueue(memory_call(action="add", content=NOTE), Text("Saved."))
    fake.enqueue(
        memory_call(action="replace", old_text="oolong", content="Favourite tea: sencha"),
        Text("Updated."),
    )
    fake.enqueue(memory_call(action="remove", old_text="sencha"), Text("Removed."))
    fake.default = Text("ok")
    async with open_api(make_settings()) as api:
        provider_turn = await api.client.post("/v1/chat/completions", json=chat_body("tea?"))
        assert provider_turn.status_code == 200, provider_turn.text
        await settle(api.runtime)
        assert notes_about(honcho, "owner") == [NOTE]
        assert NOTE in (api.runtime.settings.home / "memories" / "USER.md").read_text()

        await api.client.post("/v1/chat/completions", json=chat_body("sencha now"))
        await settle(api.runtime)
        assert notes_about(honcho, "owner") == ["Favourite tea: sencha"]  # a remove + an add

        await api.client.post("/v1/chat/completions", json=chat_body("forget the tea"))
        await settle(api.runtime)
        assert notes_about(honcho, "owner") == []


async def test_deleting_a_session_over_the_api_ends_it_at_the_provider(
    honcho: HonchoAPI, fake: FakeModel
) -> None:
    fake.default = Text("ok")
    async with open_api(make_settings()) as api:
        headers = {"X-Hermes-Session-Id": "to-delete"}
        r = await api.client.post("/v1/chat/completions", json=chat_body("hi"), headers=headers)
        assert r.status_code == 200, r.text
        await settle(api.runtime)
        before = honcho.general_recalls("owner")

        deleted = await api.client.delete("/api/sessions/to-delete")
        assert deleted.status_code == 200, deleted.text
        await settle(api.runtime)

        assert honcho.general_recalls("owner") == before + 1


async def test_new_and_leaving_the_terminal_chat_end_its_sessions(
    honcho: HonchoAPI, fake: FakeModel
) -> None:
    fake.default = Text("ok")

    def chat() -> None:
        with chat_in_pty("--session", "first") as child:
            child.sendline("hello")
            child.expect("ok")
            child.sendline("/new")
            child.expect("New session")
        assert child.exitstatus == 0

    await asyncio.to_thread(chat)
    # one for /new (the session "first"), one for leaving (the new session)
    await wait_until(lambda: honcho.general_recalls("owner") == 2, what="two session ends")
