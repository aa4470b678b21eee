"""One-line notices for memory saves, whoever made them: the memory tool during a turn, the
flush before a compression, or the background review after a turn."""

from __future__ import annotations

from hermes.config.settings import Settings
from hermes.memory.notes import FILES, NotesStore
from hermes.text import clip

LABEL = {"memory": "noted", "user": "noted about you"}


class NotesWatcher:
    """Compares the scope's notes with what it saw last; `changes()` says what moved."""

    def __init__(self, settings: Settings, scope: str) -> None:
        self.notes = NotesStore(settings.home, scope, settings.memory)
        self.seen = self._read()

    def _read(self) -> dict[str, list[str]]:
        try:
            return {target: self.notes.read(target).entries for target in FILES}
        except Exception:  # an unreadable notes file is doctor's business, not the chat's
            return {}

    def changes(self) -> list[str]:
        now = self._read()
        lines: list[str] = []
        for target, entries in now.items():
            before = self.seen.get(target, [])
            added = [e for e in entries if e not in before]
            removed = [e for e in before if e not in entries]
            for entry in added:
                lines.append(f"memory: {LABEL[target]}: {clip(' '.join(entry.split()), 70)}")
            if removed and not added:
                lines.append(
                    f"memory: {len(removed)} {FILES[target]} entr{'y' if len(removed) == 1 else 'ies'} removed"
                )
        if now:
            self.seen = now
        return lines
