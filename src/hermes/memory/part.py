"""The memory part: the notes provider (MEMORY.md / USER.md, the `memory` tool) and the
external memory providers. Search over past conversations is the recall part's."""

from __future__ import annotations

from hermes.plugins import Registry


def register(hermes: Registry) -> None:
    from hermes.memory import providers
    from hermes.memory.health import notes_health
    from hermes.memory.provider import NotesProvider

    hermes.memory_provider(NotesProvider)
    providers.register(hermes)  # Honcho, Mem0, Supermemory: registered as a plugin would
    hermes.health("notes", notes_health)
