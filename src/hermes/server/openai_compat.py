"""The Chat Completions wire format: parse a request body into a turn, build response objects.

Parsing is hand-written rather than a pydantic model so each refusal names the exact place
(`messages[2].content[1]`) and says what to send instead, and so a body holding a long
stateless history is parsed once by `json.loads` with no second validation pass.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from hermes.models.types import Usage
from hermes.server.errors import APIError

TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
SYSTEM_ROLES = frozenset({"system", "developer"})
TOOL_ROLES = frozenset({"tool", "function"})
KNOWN_ROLES = frozenset({"user", "assistant"}) | SYSTEM_ROLES | TOOL_ROLES


@dataclass
class ChatCall:
    """What a Chat Completions request asks of the agent."""

    model: str
    stream: bool
    user_message: str
    history: list[dict[str, Any]] = field(default_factory=list)
    system_extra: str | None = None


def _bad(message: str, param: str | None, code: str = "invalid_value") -> APIError:
    return APIError(400, message, code=code, param=param)


def _collapse(content: Any, where: str) -> str:
    """Message content (string or list of parts) → text; non-text parts are refused by name."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(
            f"{where} must be a string or a list of content parts, not {type(content).__name__}.",
            where,
        )
    texts: list[str] = []
    for j, part in enumerate(content):
        here = f"{where}[{j}]"
        if not isinstance(part, dict):
            raise _bad(f'{here} must be an object like {{"type": "text", "text": "..."}}.', here)
        kind = part.get("type")
        if kind not in TEXT_PART_TYPES:
            raise _bad(
                f"{here} is a {kind!r} part; Hermes passes only text to the model, so "
                'send text parts (type "text").',
                here,
                "unsupported_content_type",
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise _bad(f"{here}.text must be a string.", f"{here}.text")
        texts.append(text)
    return "\n".join(texts)


def _check_options(body: dict[str, Any], ignore_client_tools: bool) -> None:
    if body.get("tools") and not ignore_client_tools:
        raise _bad(
            "Client-supplied `tools` are not executed: Hermes runs its own tools on the "
            "server. Remove `tools` (or set server.ignore_client_tools: true to have them "
            "ignored).",
            "tools",
            "client_tools_unsupported",
        )
    n = body.get("n")
    if n is not None and n != 1:
        raise _bad("`n` must be 1: Hermes produces one answer per turn.", "n")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise _bad("`stream` must be true or false.", "stream")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise _bad("`model` must be a string.", "model")


def _message_fields(i: int, message: Any, ignore_client_tools: bool) -> tuple[str, str] | None:
    """(role, text) of one message; None for client tool traffic that is being ignored."""
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise _bad(f"{where} must be an object with `role` and `content`.", where)
    role = message.get("role")
    if role not in KNOWN_ROLES:
        raise _bad(
            f"{where}.role must be one of system, developer, user, assistant; got {role!r}.",
            f"{where}.role",
        )
    if role in TOOL_ROLES or (role == "assistant" and message.get("tool_calls")):
        if not ignore_client_tools:
            raise _bad(
                f"{where} carries client tool traffic ({role!r}); Hermes runs its own "
                "tools server-side. Send only system, user and assistant text.",
                where,
                "client_tools_unsupported",
            )
        if role in TOOL_ROLES:
            return None
    return role, _collapse(message.get("content"), f"{where}.content")


def parse_chat_body(raw: bytes, *, default_model: str, ignore_client_tools: bool) -> ChatCall:
    """Validate a /v1/chat/completions body; the last user message becomes the new turn."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(f"The request body is not valid JSON: {exc}.", None, "invalid_json") from None
    if not isinstance(body, dict):
        raise _bad("The request body must be a JSON object.", None, "invalid_json")
    _check_options(body, ignore_client_tools)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("`messages` must be a non-empty list of chat messages.", "messages")
    systems: list[str] = []
    convo: list[tuple[int, str, str]] = []
    for i, message in enumerate(messages):
        fields = _message_fields(i, message, ignore_client_tools)
        if fields is None:
            continue
        role, text = fields
        if role in SYSTEM_ROLES:
            if text.strip():
                systems.append(text)
        else:
            convo.append((i, role, text))
    if not convo or convo[-1][1] != "user":
        where = f"messages[{convo[-1][0]}]" if convo else "messages"
        raise _bad(
            "The last non-system message must be the user's new message; it is the turn "
            "Hermes answers.",
            where,
            "no_user_message",
        )
    last_index, _, user_text = convo[-1]
    if not user_text.strip():
        raise _bad(f"messages[{last_index}].content is empty.", f"messages[{last_index}].content")
    return ChatCall(
        model=body.get("model") or default_model,
        stream=bool(body.get("stream")),
        user_message=user_text,
        history=[{"role": role, "content": text} for _, role, text in convo[:-1]],
        system_extra="\n\n".join(systems) or None,
    )


# ---------------------------------------------------------------------- responses


def new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage_dict(usage: Usage) -> dict[str, int]:
    total = usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": total,
    }


def completion_body(
    completion_id: str, model: str, content: str, finish_reason: str, usage: Usage
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage_dict(usage),
    }


class ChunkWriter:
    """Serialises `chat.completion.chunk` SSE frames for one streamed completion."""

    def __init__(self, completion_id: str, model: str) -> None:
        self._head = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }

    def chunk(
        self,
        delta: dict[str, Any],
        finish_reason: str | None = None,
        usage: Usage | None = None,
    ) -> bytes:
        obj: dict[str, Any] = {
            **self._head,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if usage is not None:
            obj["usage"] = usage_dict(usage)
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    def tool_progress(self, tool: str, call_id: str, status: str) -> bytes:
        """A tool-progress frame: tool name and status only, never arguments or results.

        It is an ordinary `chat.completion.chunk` whose one choice has an empty delta, so a
        client's plain `for chunk in stream: chunk.choices[0].delta` loop passes over it (SDKs
        ignore SSE event names and parse every data line as a chunk). Hermes-aware clients
        read the `hermes` field, or listen for the `hermes.tool.progress` event name.
        """
        progress = {"tool": tool, "toolCallId": call_id, "status": status}
        obj = {
            **self._head,
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": None}],
            "hermes": {"type": "tool.progress", **progress},
            **progress,
        }
        return b"event: hermes.tool.progress\ndata: " + json.dumps(obj).encode() + b"\n\n"

    @staticmethod
    def error(err: APIError) -> bytes:
        return b"data: " + json.dumps(err.body()).encode() + b"\n\n"

    DONE = b"data: [DONE]\n\n"
