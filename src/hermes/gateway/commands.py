"""Chat commands, the same on every platform (SPEC §10): /stop /new /queue /steer /status
/sethome /skills /usage /help /approve /deny. A command never reaches the model and never waits for a turn."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from hermes.agent.invocations import SlashInvocations
from hermes.gateway.approvals import APPROVE_WORDS
from hermes.gateway.base import Inbound
from hermes.gateway.chats import ChatWorker
from hermes.gateway.state import set_home
from hermes.tools.approval import Decision

if TYPE_CHECKING:
    from hermes.gateway.runner import Gateway

HELP = """Commands:
/stop - stop the current reply (and drop queued messages)
/new - start a fresh conversation (the old one stays searchable)
/queue <text> - answer this after the current reply
/steer <text> - add this to the current reply before its next step
/status - what this chat is doing
/usage - tokens of this conversation (by model when more than one answered)
/sethome - make this chat the home for scheduled deliveries
/approve [session|always] - allow the action waiting for approval
/deny - refuse it
/skills - the skills this chat can run
/<skill> <text> - answer with that skill's instructions (as in hermes chat)
/help - this list"""


@dataclass(frozen=True)
class Command:
    name: str
    args: str


def parse_command(text: str) -> Command | None:
    """`/name[@bot] args` → Command; anything else (or an unknown name) → None."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    head, _, args = stripped.partition(" ")
    name = head[1:].split("@", 1)[0].lower()
    if name not in HANDLERS:
        return None
    return Command(name, args.strip())


Handler = Callable[["Gateway", ChatWorker, Inbound, str], Awaitable[str | None]]


async def _skills(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str:
    provider = gw.runtime.services.find(SlashInvocations)
    found = await asyncio.to_thread(provider.listing, platform=msg.platform) if provider else []
    if not found:
        return "No skills are installed for this chat."
    lines = [f"/{name} - {description}" for name, description in found]
    return "Skills (send /<skill> <text>):\n" + "\n".join(lines)


async def _stop(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str:
    stopped = await worker.stop()
    return "⏹ Stopped." if stopped else "Nothing is running."


async def _new(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str:
    await worker.stop()
    ended = await asyncio.to_thread(gw.sessions.current, worker.scope, worker.key)
    session = await asyncio.to_thread(gw.sessions.start_new, worker.scope, worker.key)
    gw.runtime.agent.end_session(worker.scope, ended)
    return f"✨ New conversation ({session}). The previous one stays searchable."


async def _queue(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str | None:
    if not args:
        return "Usage: /queue <text>"
    worker.enqueue(replace(msg, text=args))
    return "⏳ Queued." if worker.busy else None


async def _steer(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str | None:
    if not args:
        return "Usage: /steer <text>"
    return worker.steer(replace(msg, text=args))


async def _status(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str:
    session = await asyncio.to_thread(gw.sessions.current, worker.scope, worker.key)
    lines = [
        f"Session: {session}",
        f"Busy: {'yes' if worker.busy else 'no'} · queued: {len(worker.pending)}",
        f"Busy mode: {gw.busy_mode}",
        f"Home: {gw.home or 'not set (send /sethome)'}",
    ]
    if worker.approval is not None:
        lines.append("Waiting for /approve or /deny.")
    return "\n".join(lines)


async def _usage(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str:
    """This conversation's tokens, from the usage records (written after each turn, so the
    buffered ones are written first), by the model that answered when several did."""
    agent = gw.runtime.agent
    session_id = await asyncio.to_thread(gw.sessions.current, worker.scope, worker.key)
    usage = agent.store.usage
    if usage is None:
        return "Token usage is not recorded by this store."
    await agent.usage.flush()
    totals = await asyncio.to_thread(usage.session_usage, worker.scope, session_id)
    if not totals:
        return f"Nothing used yet in this conversation ({session_id})."
    prompt = sum(t.prompt_tokens for t in totals)
    completion = sum(t.completion_tokens for t in totals)
    calls = sum(t.calls for t in totals)
    lines = [
        f"Conversation {session_id}: {prompt:,} prompt + {completion:,} completion tokens "
        f"over {calls} model call(s)"
    ]
    if len(totals) > 1:
        lines += [
            f"  {t.model}: {t.prompt_tokens:,} prompt + {t.completion_tokens:,} completion"
            for t in totals
        ]
    return "\n".join(lines)


async def _sethome(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str:
    if not gw.access.is_owner(msg.identity):
        return "Only the owner (gateway.owner) can set the home chat."
    target = msg.session_key
    await asyncio.to_thread(set_home, gw.settings.home, target)
    gw.home = target
    return f"🏠 Home set to {target}: scheduled answers for 'home' come here."


async def _help(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str:
    return HELP


async def _approve(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str | None:
    decision = APPROVE_WORDS.get(args.lower())
    if decision is None:
        return "Usage: /approve, /approve session or /approve always"
    return await _resolve(gw, worker, msg, decision)


async def _deny(gw: Gateway, worker: ChatWorker, msg: Inbound, args: str) -> str | None:
    return await _resolve(gw, worker, msg, "deny")


async def _resolve(gw: Gateway, worker: ChatWorker, msg: Inbound, decision: Decision) -> str | None:
    """Confirm, then resume the turn: its answer always comes after the confirmation."""
    if worker.approval is None or worker.approval.done():
        return "Nothing is waiting for approval."
    asker = worker.approval_identity
    if asker not in (None, msg.identity) and not gw.access.is_owner(msg.identity):
        return "Only the person who asked (or the owner) can answer this approval."
    try:
        await gw.say(msg, "❌ Denied." if decision == "deny" else "✅ Approved.")
    finally:
        worker.resolve_approval(decision)
    return None


HANDLERS: dict[str, Handler] = {
    "stop": _stop,
    "new": _new,
    "reset": _new,
    "queue": _queue,
    "q": _queue,
    "steer": _steer,
    "status": _status,
    "usage": _usage,
    "sethome": _sethome,
    "skills": _skills,
    "help": _help,
    "start": _help,
    "approve": _approve,
    "deny": _deny,
}
NAMES: frozenset[str] = frozenset(HANDLERS)
"""Every command name (aliases included): platforms that route commands themselves (Slack's
slash commands) read this list, so a new command or alias reaches every platform."""
