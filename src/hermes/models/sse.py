"""Server-sent events out of a byte stream, as the event-stream format defines them (HTML
Living Standard, "Server-sent events"): lines end with CRLF, LF or CR; `data:` lines of one
event are joined with newlines; a blank line ends an event; an event with no data is not
dispatched; lines starting with a colon are comments. Only what a chat-completions stream
uses is kept: the event's name and its data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    data: str
    name: str | None = None


class EventReader:
    """Feed it bytes as they come; it gives the events they complete."""

    def __init__(self) -> None:
        self._rest = b""
        self._data: list[str] = []
        self._name: str | None = None

    def feed(self, chunk: bytes) -> Iterator[Event]:
        buffer = self._rest + chunk
        # a CR at the very end may be the first half of a CRLF: keep it for the next chunk
        keep_cr = buffer.endswith(b"\r")
        if keep_cr:
            buffer = buffer[:-1]
        lines = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._rest = lines.pop() + (b"\r" if keep_cr else b"")
        for line in lines:
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                yield event

    def _line(self, line: str) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._name = value
        return None  # `id` and `retry` mean nothing to a one-shot completion stream

    def _dispatch(self) -> Event | None:
        data, name = self._data, self._name
        self._data, self._name = [], None
        if not data:
            return None
        return Event("\n".join(data), name)


async def events(pieces: AsyncIterator[bytes]) -> AsyncIterator[Event]:
    """The events of a stream of bytes; an event not ended by a blank line is dropped."""
    reader = EventReader()
    async for piece in pieces:
        for event in reader.feed(piece):
            yield event
