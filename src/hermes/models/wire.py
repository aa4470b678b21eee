"""The JSON body of a chat-completions request, built so a long session costs little per turn.

A session at turn 1,000 resends ~2,000 history messages on every call. Encoding them all again
each turn was a third of the server's CPU at that length, yet the history never changes between
turns: only the newest messages are new. `FrozenMessage` is a read-only dict that remembers its
own JSON, so the history views (which keep their messages across turns) encode each message once,
and a request body becomes a join of cached fragments plus the few fresh messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

__all__ = ["FrozenMessage", "encode_chat_body", "freeze"]


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


def encode_chat_body(
    params: dict[str, Any],
    messages: Sequence[Mapping[str, Any]],
    tools: Iterable[Mapping[str, Any]] | None = None,
) -> bytes:
    """`{**params, "messages": [...], "tools": [...]}` as UTF-8 JSON bytes.

    Frozen messages and tool schemas contribute their cached JSON; plain dicts are encoded now.
    """
    head = _dumps(params)
    parts = [head[:-1], "," if len(head) > 2 else "", '"messages":[']
    # the hot loop of a long session: a cached fragment is one attribute read
    parts.append(",".join([
        m._json if type(m) is FrozenMessage and m._json is not None else _fragment(m)
        for m in messages
    ]))
    parts.append("]")
    tool_parts = [_fragment(t) for t in tools] if tools else []
    if tool_parts:
        parts.append(',"tools":[')
        parts.append(",".join(tool_parts))
        parts.append("]")
    parts.append("}")
    return "".join(parts).encode()
