"""The memory part: the notes provider (MEMORY.md / USER.md, the `memory` tool) and
`session_search` over every past conversation of the caller's scope."""

from __future__ import annotations

from hermes.plugins import Registry


def register(hermes: Registry) -> None:
    from hermes.memory.health import notes_health
    from hermes.memory.provider import NotesProvider
    from hermes.memory.search import session_search

    hermes.memory_provider(NotesProvider)
    hermes.tool(session_search, group="session_search")
    hermes.health("notes", notes_health)
