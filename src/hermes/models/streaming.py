"""Answers into `Completion`s: SSE chunks folded by `StreamAccumulator`, a plain JSON body by
`completion_from_payload`. Odd shapes become typed upstream errors, never partial answers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hermes.models.errors import ModelBadAnswerError
from hermes.models.types import Completion, ToolCall, Usage


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamAccumulator:
    """Folds chat.completion.chunk objects into one Completion.

    Tool calls arrive as fragments keyed by `index`: the first carries id and name,
    later ones carry slices of the JSON arguments. Parallel calls use distinct
    indexes (OpenAI sends them one after another, but we don't rely on that).
    """

    model: str
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None

    def add(self, chunk: Any) -> str:
        """Absorb one chunk; return its text delta ('' if none)."""
        if getattr(chunk, "model", None):
            self.model = chunk.model
        if getattr(chunk, "usage", None) is not None:
            self.usage = usage_from_sdk(chunk.usage)
        emitted: list[str] = []
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) not in (0, None):
                continue  # we never ask for n > 1
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    emitted.append(delta.content)
                for tc in delta.tool_calls or []:
                    self._add_call_fragment(tc)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        text = "".join(emitted)
        if text:
            self.text.append(text)
        return text

    def _add_call_fragment(self, tc: Any) -> None:
        index = tc.index
        if index is None:
            # Some servers omit the index; a fresh id starts a new call, otherwise continue the last.
            if tc.id and all(p.id != tc.id for p in self.calls.values()):
                index = len(self.calls)
            else:
                index = max(self.calls, default=0)
        partial = self.calls.setdefault(index, _PartialCall())
        if tc.id and not partial.id:
            partial.id = tc.id
        fn = tc.function
        if fn is not None:
            if fn.name and not partial.name:  # some servers repeat the name on every fragment
                partial.name = fn.name
            if fn.arguments:
                partial.arguments.append(fn.arguments)

    def result(self) -> Completion:
        calls = [
            ToolCall(id=p.id or f"call_{i}", name=p.name, arguments="".join(p.arguments))
            for i, p in sorted(self.calls.items())
        ]
        return Completion(
            content="".join(self.text) if self.text else None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model=self.model,
        )


class JsonFields:
    """Decoded JSON read by attribute, as the SDK's chunk objects are (a missing field is
    None): `StreamAccumulator` folds the chunks of either client the same way."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        return as_fields(self._data.get(name))


def as_fields(value: Any) -> Any:
    """`value` with its objects, at any depth, read by attribute."""
    if isinstance(value, dict):
        return JsonFields(value)
    if isinstance(value, list):
        return [as_fields(item) for item in value]
    return value


def completion_from_payload(payload: Any, model_name: str) -> Completion:
    """A non-streamed chat.completion (plain JSON) as a Completion; odd shapes are upstream errors."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    choice: Any = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelBadAnswerError(
            "The model endpoint returned a completion with no choices (HTTP 200)."
        )
    calls: list[ToolCall] = []
    for i, tc in enumerate(message.get("tool_calls") or []):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict):  # non-function tool types (e.g. "custom") are not ours to run
            continue
        arguments = fn.get("arguments") or ""
        if not isinstance(arguments, str):  # a few servers send the object instead of its JSON
            arguments = json.dumps(arguments)
        calls.append(
            ToolCall(
                id=tc.get("id") or f"call_{i}", name=str(fn.get("name") or ""), arguments=arguments
            )
        )
    content = message.get("content")
    return Completion(
        content=content if isinstance(content, str) or content is None else str(content),
        tool_calls=calls,
        finish_reason=choice.get("finish_reason") if isinstance(choice, dict) else None,
        usage=usage_from_json(payload.get("usage")),
        model=payload.get("model") or model_name,
    )


def usage_from_json(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    prompt = _int(raw.get("prompt_tokens"))
    completion = _int(raw.get("completion_tokens"))
    total = _int(raw.get("total_tokens")) or prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_sdk(raw: Any) -> Usage | None:
    if raw is None:
        return None
    prompt = getattr(raw, "prompt_tokens", None) or 0
    completion = getattr(raw, "completion_tokens", None) or 0
    total = getattr(raw, "total_tokens", None) or prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)
