"""Tab completion for the chat: commands, skill names after `/`, session ids after
`/resume `, model names after `/model `."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from typing import Any

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

Source = Callable[[], list[tuple[str, str]]]
"""(word, short description) pairs; called when completion needs them."""


class Cached:
    """A source asked at most once every `seconds` (sessions change; skills rarely)."""

    def __init__(self, source: Source, seconds: float = 5.0) -> None:
        self.source = source
        self.seconds = seconds
        self._at = -1e9
        self._value: list[tuple[str, str]] = []

    def __call__(self) -> list[tuple[str, str]]:
        if time.monotonic() - self._at > self.seconds:
            try:
                self._value = self.source()
            except Exception:  # completion must never break typing
                self._value = []
            self._at = time.monotonic()
        return self._value


class ChatCompleter(Completer):
    def __init__(
        self,
        commands: Iterable[tuple[str, str]],
        skills: Source,
        sessions: Source,
        models: Source | None = None,
        fetch_models: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self.commands = list(commands)
        self.skills = skills
        self.sessions = sessions
        self.models = models
        self.fetch_models = fetch_models
        """Asks the endpoint for its models (once) the first time `/model ` is completed."""

    async def get_completions_async(
        self, document: Document, complete_event: CompleteEvent
    ) -> AsyncGenerator[Completion, None]:
        if self.fetch_models is not None and document.text_before_cursor.startswith("/model "):
            await self.fetch_models()
        for completion in self.get_completions(document, complete_event):
            yield completion

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        head, space, word = text.partition(" ")
        if not space:
            words = self.commands + [(f"/{name}", desc) for name, desc in self.skills()]
            yield from _matching(words, head)
        elif head == "/resume" and " " not in word:
            yield from _matching(self.sessions(), word)
        elif head == "/model" and self.models is not None and " " not in word:
            yield from _matching(self.models(), word)


def _matching(words: list[tuple[str, str]], prefix: str) -> Iterable[Completion]:
    low = prefix.lower()
    for word, description in words:
        if word.lower().startswith(low):
            yield Completion(word, start_position=-len(prefix), display_meta=description[:50])
