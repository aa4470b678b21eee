"""The chat's slash commands. Each is an async function of the chat and the rest of the line;
the table below is what `/help` and tab completion read."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from hermes.agent.policy import visible
from hermes.agent.undo import undo_last_exchange
from hermes.cli.repl import skills
from hermes.cli.repl.ids import new_session_id
from hermes.cli.repl.session import ChatSession
from hermes.cli.repl.usage import usage_report
from hermes.recall.query import query_terms
from hermes.store.base import MessageRecord, SessionRecord
from hermes.text import clip

Handler = Callable[[ChatSession, str], Awaitable[None]]
EXIT = ("/exit", "/quit")


@dataclass(frozen=True)
class Command:
    name: str
    args: str
    help: str
    run: Handler


def when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).astimezone().strftime("%Y-%m-%d %H:%M")


async def _first_words(chat: ChatSession, session: SessionRecord) -> str:
    """The session's title, else its first user message, on one short line."""
    if session.title:
        return clip(" ".join(session.title.split()), 60)
    rows = await asyncio.to_thread(chat.store.get_messages, chat.scope, session.id, end=4)
    first = next((r.content for r in rows if r.role == "user" and r.content), "")
    return clip(" ".join(first.split()), 60)


async def _show_sessions(chat: ChatSession, sessions: list[SessionRecord]) -> None:
    """One row per session in aligned columns (ids differ in length: a generated
    `20300107_080000_3f2a9c` next to a short `--session` name)."""
    width = max(len(s.id) for s in sessions)
    count = max(len(f"{s.message_count:,}") for s in sessions)
    for number, s in enumerate(sessions, 1):
        mark = "*" if s.id == chat.session_id else " "
        words = await _first_words(chat, s)
        chat.say(
            f"{mark}{number:>3}  {s.id:<{width}}  {when(s.updated_at)}  "
            f"{s.message_count:>{count},} msgs  {words}".rstrip()
        )


async def _new(chat: ChatSession, _: str) -> None:
    chat.runtime.agent.end_session(chat.scope, chat.session_id)
    chat.session_id = new_session_id()
    chat.reset_usage()
    chat.print(f"New session [cyan]{chat.session_id}[/cyan] (the old one stays searchable).")


async def _sessions(chat: ChatSession, _: str) -> None:
    sessions = await asyncio.to_thread(chat.store.list_sessions, chat.scope, limit=15)
    if not sessions:
        chat.say("No sessions yet.")
        return
    await _show_sessions(chat, sessions)
    chat.print("[dim]/resume <id|number|words> continues one.[/dim]")


async def _candidates(chat: ChatSession, query: str) -> list[SessionRecord]:
    """Sessions whose id or title holds `query`, then those whose messages mention it."""
    recent = await asyncio.to_thread(chat.store.list_sessions, chat.scope, limit=200)
    needle = query.lower()
    found = [s for s in recent if needle in s.id.lower() or needle in (s.title or "").lower()]
    terms = query_terms(query)
    if terms:
        hits = await asyncio.to_thread(
            chat.store.search.match_messages, chat.scope, terms, view="message", limit=50
        )
        by_id = {s.id: s for s in recent}
        for hit in hits:
            s = by_id.get(hit.session_id) or await asyncio.to_thread(
                chat.store.get_session, chat.scope, hit.session_id
            )
            if s is not None and s not in found:
                found.append(s)
    return found[:15]


async def _pick(chat: ChatSession, sessions: list[SessionRecord]) -> SessionRecord | None:
    await _show_sessions(chat, sessions)
    answer = (await chat.ask(f"resume which? [1-{len(sessions)}, Enter to cancel] ")).strip()
    if answer.isdigit() and 1 <= int(answer) <= len(sessions):
        return sessions[int(answer) - 1]
    if answer:
        chat.say(f"{answer!r} is not a number from the list; nothing resumed.")
    return None


async def _resume(chat: ChatSession, arg: str) -> None:
    query = arg.strip()
    exact = await asyncio.to_thread(chat.store.get_session, chat.scope, query) if query else None
    if exact is not None:
        await _switch(chat, exact)
        return
    if query.isdigit() or not query:
        recent = await asyncio.to_thread(chat.store.list_sessions, chat.scope, limit=15)
        if query and 1 <= int(query) <= len(recent):
            await _switch(chat, recent[int(query) - 1])
            return
        found = recent
    else:
        found = await _candidates(chat, query)
    if not found:
        chat.say(f"No session matches {query!r}." if query else "No sessions yet.")
        return
    chosen = found[0] if len(found) == 1 and query else await _pick(chat, found)
    if chosen is not None:
        await _switch(chat, chosen)


async def _switch(chat: ChatSession, session: SessionRecord) -> None:
    chat.session_id = session.id
    chat.reset_usage()
    chat.print(f"Resumed [cyan]{session.id}[/cyan] ({session.message_count} messages).")
    rows = await asyncio.to_thread(_recent_visible, chat, session)
    for row in rows:
        if row.role in ("user", "assistant") and row.content:
            who = "you" if row.role == "user" else "hermes"
            chat.print(f"[dim]{who}: {_escape(clip(' '.join(row.content.split()), 200))}[/dim]")


def _recent_visible(chat: ChatSession, session: SessionRecord) -> list[MessageRecord]:
    """The last few messages still in the prompt (what was undone is not shown)."""
    start = max(0, session.message_count - 12)
    rows = chat.store.get_messages(chat.scope, session.id, start=start)
    return visible(rows, chat.store.hidden_ranges(chat.scope, session.id))[-6:]


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


async def _undo(chat: ChatSession, _: str) -> None:
    taken = await asyncio.to_thread(undo_last_exchange, chat.store, chat.scope, chat.session_id)
    if taken is None:
        chat.say("Nothing to undo in this session.")
        return
    usage = chat.forget_turn(taken.start)
    counted = (
        f"; its {usage.prompt_tokens:,} + {usage.completion_tokens:,} tokens no longer count "
        "for this chat in /usage"
        if usage is not None
        else ""
    )
    chat.say(
        f"Took back: {clip(' '.join(taken.user_text.split()), 80)!r} "
        f"(out of the prompt; still in the session's history{counted})"
    )


async def _retry(chat: ChatSession, _: str) -> None:
    taken = await asyncio.to_thread(undo_last_exchange, chat.store, chat.scope, chat.session_id)
    if taken is None or not taken.user_text:
        chat.say("Nothing to retry in this session.")
        return
    chat.forget_turn(taken.start)  # the retried turn counts once, as its new answer
    chat.print(f"[dim]retrying: {_escape(clip(taken.user_text, 80))}[/dim]")
    await chat.send(taken.user_text)


async def _compress(chat: ChatSession, _: str) -> None:
    from hermes.cli.repl.actions import compress_now

    chat.say(await compress_now(chat))


async def _usage(chat: ChatSession, _: str) -> None:
    for line in await usage_report(chat):
        chat.say(line)


async def _model(chat: ChatSession, arg: str) -> None:
    from hermes.cli.repl.actions import switch_model

    for line in await switch_model(chat, arg.strip()):
        chat.say(line)


async def _tools(chat: ChatSession, _: str) -> None:
    toolset = chat.runtime.agent.toolset_for(chat.scope, "cli")
    for schema in toolset.schemas():
        fn = schema.get("function", schema)
        doc = " ".join(str(fn.get("description", "")).split())
        chat.print(f"[bold]{fn.get('name')}[/bold]  [dim]{_escape(clip(doc, 90))}[/dim]")
    if not len(toolset):
        chat.say("No tools are on (agent.toolsets in config.yaml chooses them).")


async def _memory(chat: ChatSession, _: str) -> None:
    from hermes.memory.notes import FILES, NotesStore

    settings = chat.runtime.settings
    notes = NotesStore(settings.home, chat.scope, settings.memory)
    for target in FILES:
        state = notes.read(target)
        chat.print(f"[bold]── {state.path.name}[/bold] [dim][{state.usage}][/dim]")
        chat.say("\n§\n".join(state.entries) if state.entries else "(empty)")


async def _skills(chat: ChatSession, _: str) -> None:
    if not skills.available(chat.runtime.settings):
        chat.say(skills.OFF)
        return
    found = await asyncio.to_thread(skills.skill_list, chat.runtime.settings)
    if not found:
        chat.say("No skills installed (hermes skills list; skills/<name>/SKILL.md).")
    for name, description in found:
        chat.print(f"[bold]/{name}[/bold]  [dim]{_escape(clip(description, 90))}[/dim]")


async def _help(chat: ChatSession, _: str) -> None:
    chat.say("Commands:")
    for c in COMMANDS:
        chat.say(f"  {(c.name + ' ' + c.args).strip():<22} {c.help}")
    chat.say(f"  {'/<skill> [text]':<22} run a turn with that skill loaded (/skills lists them)")
    chat.say(f"  {'/exit':<22} leave (Ctrl-D works too)")
    chat.say(
        "Enter sends; Alt-Enter or a trailing \\ adds a line. Tab completes. "
        "Ctrl-C stops a turn (keeps what was said); Ctrl-C again exits."
    )


COMMANDS: list[Command] = [
    Command("/new", "", "start a new session (the old one stays searchable)", _new),
    Command(
        "/resume", "[id|n|words]", "continue a session: pick one, or name or search it", _resume
    ),
    Command("/sessions", "", "list recent sessions", _sessions),
    Command("/retry", "", "ask the last message again (the old answer leaves the prompt)", _retry),
    Command("/undo", "", "take back the last exchange (kept in history, out of the prompt)", _undo),
    Command("/compress", "", "summarise the older part of this session now", _compress),
    Command("/usage", "", "tokens and cost of this session", _usage),
    Command("/model", "[name]", "show the model and what the endpoint offers, or switch", _model),
    Command("/tools", "", "the tools the agent may use here", _tools),
    Command("/memory", "", "what Hermes remembers (MEMORY.md, USER.md)", _memory),
    Command("/skills", "", "installed skills", _skills),
    Command("/help", "", "this help", _help),
]
BY_NAME = {c.name: c for c in COMMANDS}


async def dispatch(chat: ChatSession, line: str) -> bool:
    """Run a slash command or a `/<skill>` turn; False when the line names neither."""
    name, _, rest = line.partition(" ")
    command = BY_NAME.get(name.lower())
    if command is not None:
        await command.run(chat, rest)
        return True
    turn = await asyncio.to_thread(skills.expand, chat.runtime.settings, line)
    if turn is None:
        return False
    chat.print(f"[dim]skill: {', '.join(turn.skills)}[/dim]")
    await chat.send(turn.user_message, system_extra=turn.system_extra)
    return True
