"""The third-party memory provider README's "External memory" shows, as a plugin module: a
`Backend` kept in a dict, registered with `add_provider` and on whenever the plugin is loaded.
`DELAY` makes its recall slow (the tests set it); `QUERIES` keeps what each recall was asked."""

from __future__ import annotations

import time
from collections.abc import Sequence

from hermes.memory.providers.backend import Said
from hermes.memory.providers.plugin import add_provider

DELAY = 0.0
QUERIES: list[str] = []


class Notebook:
    def __init__(self, settings: object) -> None:
        self.pages: dict[str, list[str]] = {}

    def check(self) -> str:
        return "the notebook is open"

    def recall(self, user: str, query: str) -> str:
        QUERIES.append(query)
        time.sleep(DELAY)
        return "\n".join(f"- {line}" for line in self.pages.get(user, []))

    def store(self, user: str, session: str, turn: Sequence[Said]) -> None:
        self.pages.setdefault(user, []).extend(s.content for s in turn if s.role == "user")

    def search(self, user: str, query: str, limit: int) -> list[str]:
        words = set(query.lower().split())
        found = [p for p in self.pages.get(user, []) if words & set(p.lower().split())]
        return found[:limit]

    def forget(self, user: str) -> int:
        return len(self.pages.pop(user, []))

    def close(self) -> None:
        self.pages.clear()


def register(hermes: object) -> None:
    add_provider(
        hermes,  # type: ignore[arg-type]
        "notebook",
        Notebook,
        "Search what the user wrote in past conversations.",
        chosen=lambda settings: True,
    )
