"""The JSON body of a chat-completions request, built so a long session costs little per turn.

A session at turn 1,000 resends ~2,000 history messages on every call. Encoding them all again
each turn was a third of the server's CPU at that length, yet the history never changes between
turns: only the newest messages are new. `FrozenMessage` is a read-only dict that remembers its
own JSON, so the history views (which keep their messages across turns) encode each message once,
and a request body becomes a join of cached fragments plus the few fresh messages.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, NoReturn, TypeVar

__all__ = ["FrozenMessage", "FrozenRuns", "encode_chat_body", "freeze"]

T = TypeVar("T")


class FrozenMessage(dict):  # type: ignore[type-arg]
    """A chat message (or tool schema) that may not change, so its cached JSON stays true.

    Nested values are trusted not to be mutated either; nothing in Hermes mutates a message
    once it is built (compression builds new ones).
    """

    __slots__ = ("_json",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._json: str | None = None

    def json(self) -> str:
        """This message as compact JSON, computed on first use."""
        if self._json is None:
            self._json = _dumps(self)
        return self._json

    def _readonly(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a FrozenMessage cannot be changed; build a new message instead")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly  # type: ignore[assignment]
    __ior__ = _readonly  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMessage, (dict(self),))

    def __copy__(self) -> FrozenMessage:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenMessage:
        return self


def freeze(message: Mapping[str, Any]) -> FrozenMessage:
    """`message` as a FrozenMessage (returned as is when it already is one)."""
    return message if isinstance(message, FrozenMessage) else FrozenMessage(message)


def _dumps(value: Any) -> str:
    # ASCII output: lone surrogates from odd client input stay valid JSON escapes.
    return json.dumps(value, separators=(",", ":"))


def _fragment(message: Mapping[str, Any]) -> str:
    return message.json() if isinstance(message, FrozenMessage) else _dumps(message)


class FrozenRuns(Generic[T]):
    """A value folded over each run of frozen messages, remembered per run, so a history that
    grew by two messages since the last call is extended, not folded again from its start (the
    request body's JSON: ~0.7 ms at 2,500 messages; the image-marker check: a scan of them all).

    A cached run is reused only when the new list holds equal messages at those positions
    (`==` on lists checks identity first, so the check is a fast C loop); correctness does not
    depend on who built the lists. Bounded: sessions beyond `size` active ones start over.
    """

    MIN_RUN = 32

    def __init__(self, fold: Callable[[T | None, Sequence[Mapping[str, Any]]], T], size: int = 64):
        self.fold = fold
        """`fold(value of the run so far or None, the messages after it)`: the longer run's value."""
        self.size = size
        self._runs: OrderedDict[int, tuple[list[Mapping[str, Any]], T]] = OrderedDict()

    def run(self, messages: Sequence[Mapping[str, Any]], start: int) -> tuple[T, int]:
        """The value of the run of frozen messages beginning at `start`, and where it ends."""
        key = id(messages[start])
        cached = self._runs.get(key)
        known: list[Mapping[str, Any]] = []
        value: T | None = None
        if cached is not None:
            end = start + len(cached[0])
            if end <= len(messages) and messages[start:end] == cached[0]:
                known, value = cached
        end = start + len(known)
        while end < len(messages) and type(messages[end]) is FrozenMessage:
            end += 1
        grown = end - start > len(known)
        if value is None or grown:
            value = self.fold(value, messages[start + len(known) : end])
        if end - start >= self.MIN_RUN:
            if known:  # the cache's own list: extended by what is new, not copied whole
                known.extend(messages[start + len(known) : end])
            else:
                known = list(messages[start:end])
            # holding the run keeps messages[start] alive, so its id cannot be reused
            self._runs[key] = (known, value)
            self._runs.move_to_end(key)
            while len(self._runs) > self.size:
                self._runs.popitem(last=False)
        return value, end


Chunks = tuple[bytes, ...]
"""A run's JSON as pieces, each ending where a turn's messages ended: a run one turn longer
is its pieces plus one, so each turn encodes and copies only its own messages."""

MAX_CHUNKS = 32
"""Pieces a run keeps before they are joined into one (a join copies the run, so it happens
once in this many turns, not every turn)."""


def _extend_chunks(chunks: Chunks | None, messages: Sequence[Mapping[str, Any]]) -> Chunks:
    rest = _join(messages).encode()
    if not chunks:
        return (rest,)
    if len(chunks) >= MAX_CHUNKS:
        return (b"".join((*chunks, b",", rest)),)
    return (*chunks, b"," + rest)


def _join(messages: Sequence[Mapping[str, Any]]) -> str:
    # a cached fragment is one attribute read
    return ",".join(
        [
            m._json if type(m) is FrozenMessage and m._json is not None else _fragment(m)
            for m in messages
        ]
    )


_runs: FrozenRuns[Chunks] = FrozenRuns(_extend_chunks)


def _message_pieces(messages: Sequence[Mapping[str, Any]]) -> list[bytes]:
    """The messages' JSON, comma-separated, as pieces to join once: each run of frozen ones
    from the run cache, plain ones encoded now."""
    pieces: list[bytes] = []
    i = 0
    while i < len(messages):
        if pieces:
            pieces.append(b",")
        if type(messages[i]) is FrozenMessage:
            chunks, i = _runs.run(messages, i)
            pieces.extend(chunks)
        else:
            pieces.append(_fragment(messages[i]).encode())
            i += 1
    return pieces


_TOOLS: OrderedDict[int, tuple[tuple[Mapping[str, Any], ...], bytes]] = OrderedDict()


def _tools_json(tools: Sequence[Mapping[str, Any]]) -> bytes:
    """The tool schemas' JSON array contents; a toolset offered again (the same schema
    objects, frozen) is joined once."""
    key = tuple(tools)
    frozen = all(type(t) is FrozenMessage for t in key)
    cached = _TOOLS.get(id(key[0])) if frozen else None
    if cached is not None and cached[0] == key:  # identity first: a fast C loop
        return cached[1]
    joined = ",".join([_fragment(t) for t in key]).encode()
    if frozen:  # holding the schemas keeps their ids from being reused
        _TOOLS[id(key[0])] = (key, joined)
        while len(_TOOLS) > 16:
            _TOOLS.popitem(last=False)
    return joined


def encode_chat_body(
    params: dict[str, Any],
    messages: Sequence[Mapping[str, Any]],
    tools: Iterable[Mapping[str, Any]] | None = None,
) -> bytes:
    """`{**params, "messages": [...], "tools": [...]}` as UTF-8 JSON bytes.

    Frozen messages and tool schemas contribute their cached JSON; plain dicts are encoded now.
    The body is joined once, from pieces that are bytes already.
    """
    head = _dumps(params)
    parts = [head[:-1].encode(), b"," if len(head) > 2 else b"", b'"messages":[']
    parts += _message_pieces(messages)
    parts.append(b"]")
    listed = list(tools) if tools else []
    if listed:
        parts += [b',"tools":[', _tools_json(listed), b"]"]
    parts.append(b"}")
    return b"".join(parts)
