"""The chat commands that reach into the agent: compress now, switch the model."""

from __future__ import annotations

import asyncio

from hermes.agent.history import CompressingHistory
from hermes.agent.policy import CallState
from hermes.cli.repl.session import ChatSession
from hermes.cli.repl.usage import endpoint_models


async def compress_now(chat: ChatSession) -> str:
    """Summarise the older part of the session now (what the agent does when it fills up)."""
    agent = chat.runtime.agent
    policy = agent.policy
    if not isinstance(policy, CompressingHistory):
        return "This agent keeps full history (no compression policy is configured)."
    existing = await asyncio.to_thread(chat.store.get_session, chat.scope, chat.session_id)
    if existing is None or existing.message_count == 0:
        return "Nothing to compress yet: this session is empty."
    async with agent.locks.hold(chat.scope, chat.session_id, source="cli") as held:
        session = held.session
        system = [{"role": "system", "content": session.system_prompt or ""}]
        state = CallState(
            scope=chat.scope,
            session_id=session.id,
            system=system,
            history=await policy.load_history(session),
            turn=[],
            tools=[],
            source="cli",
            on_pre_compress=agent.memory.on_pre_compress,
        )
        before = len(state.history)
        done = await policy.compress(state, reason="manual")
    if not done:
        return "Nothing to compress: the session is already as short as it gets."
    return (
        f"Compressed: {before} messages in the prompt became {len(state.history)} "
        "(originals stay in the history and search)."
    )


async def switch_model(chat: ChatSession, name: str) -> list[str]:
    """Without a name: the model in use and what the endpoint offers. With one: use it."""
    client = chat.runtime.model
    offered = [str(m.get("id")) for m in await endpoint_models(chat) if m.get("id")]
    if not name:
        lines = [f"model: {client.model or '(not set)'} at {client.base_url or '(no endpoint)'}"]
        if offered:
            lines.append("the endpoint offers: " + ", ".join(offered[:30]))
        return lines
    client.model = name
    chat.runtime.settings.model.name = name
    note = (
        ""
        if not offered or name in offered
        else " (the endpoint does not list it; it may still work)"
    )
    return [
        f"Now using {name} for this chat{note}. `hermes setup` or model.name in config.yaml "
        "changes the default."
    ]
