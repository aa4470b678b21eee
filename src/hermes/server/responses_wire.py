"""The Responses API wire format: a request body as a turn, a turn as a response object.

The request model is mapped onto the Chat Completions one (`openai_compat`) so the agent sees
one shape: input items become chat messages (function_call / function_call_output items become
assistant tool calls and tool results), `instructions` a system layer, `text.format` a
`response_format`, `max_output_tokens` `max_tokens`, `reasoning.effort` `reasoning_effort`,
and flat function tools Chat Completions tools. Unknown fields are a 400 naming them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.client_tools import ClientTools
from hermes.agent.turn import TurnResult
from hermes.models.images import ImageLimits, ImageSink
from hermes.models.types import ToolCall, Usage, tool_calls_json, tool_result
from hermes.randomid import uuid4_hex
from hermes.server.openai_compat import (
    SYSTEM_ROLES,
    bad_request,
    client_tools,
    collapse_content,
    model_options,
)

SESSION_FIELDS = frozenset({"previous_response_id", "conversation", "store"})
ENVELOPE_FIELDS = frozenset({"model", "input", "instructions", "stream", "stream_options"})
OPTION_FIELDS = frozenset(
    {"temperature", "top_p", "max_output_tokens", "reasoning", "text", "user"}
)
TOOL_FIELDS = frozenset({"tools", "tool_choice", "parallel_tool_calls"})
BOOKKEEPING_FIELDS = frozenset(
    {
        "metadata",
        "include",
        "truncation",
        "service_tier",
        "prompt_cache_key",
        "safety_identifier",
        "background",
        "top_logprobs",
        "max_tool_calls",
    }
)
"""Accepted when they ask for nothing Hermes would do differently; refused otherwise below."""
KNOWN_FIELDS = SESSION_FIELDS | ENVELOPE_FIELDS | OPTION_FIELDS | TOOL_FIELDS | BOOKKEEPING_FIELDS
_HARMLESS: dict[str, tuple[Any, ...]] = {
    "background": (None, False),
    "top_logprobs": (None, 0),
    "truncation": (None, "disabled", "auto"),
    "max_tool_calls": (None,),
}


@dataclass
class ResponsesCall:
    """What a /v1/responses request asks of the agent."""

    model: str
    stream: bool
    store: bool
    user_message: str
    history: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[dict[str, Any]] | None = None
    instructions: str | None = None
    system_extra: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    client_tools: ClientTools | None = None
    previous_response_id: str | None = None
    conversation: str | None = None
    echo: dict[str, Any] = field(default_factory=dict)
    images: ImageSink | None = None
    """The images the input carries (as marker lines in the messages' text)."""


def _check_fields(body: dict[str, Any]) -> None:
    unknown = sorted(set(body) - KNOWN_FIELDS)
    if unknown:
        names = ", ".join(f"`{u}`" for u in unknown)
        raise bad_request(
            f"Unrecognized request argument(s) {names}: Hermes does not support them; remove them.",
            unknown[0],
            "unknown_parameter",
        )
    for name, allowed in _HARMLESS.items():
        if body.get(name) not in allowed:
            raise bad_request(
                f"`{name}` = {body[name]!r} is not supported by Hermes; leave it unset.",
                name,
                "unsupported_parameter",
            )
    for name, kind in (("stream", bool), ("store", bool), ("model", str), ("instructions", str)):
        if body.get(name) is not None and not isinstance(body[name], kind):
            raise bad_request(f"`{name}` must be a {kind.__name__}.", name)


def _response_format(text: Any) -> dict[str, Any] | None:
    if text is None:
        return None
    fmt = text.get("format") if isinstance(text, dict) else None
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema" and isinstance(fmt, dict):
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    raise bad_request(
        '`text.format` must be {"type": "text"}, {"type": "json_object"} or '
        '{"type": "json_schema", "name": ..., "schema": {...}}.',
        "text.format",
    )


def _options(body: dict[str, Any]) -> dict[str, Any]:
    """Responses options as Chat Completions ones (validated by the same rules)."""
    chat: dict[str, Any] = {
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "max_tokens": body.get("max_output_tokens"),
        "user": body.get("user"),
        "response_format": _response_format(body.get("text")),
    }
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict):
        chat["reasoning_effort"] = reasoning.get("effort")
    elif reasoning is not None:
        raise bad_request('`reasoning` must be an object like {"effort": "low"}.', "reasoning")
    text = body.get("text")
    if isinstance(text, dict):
        chat["verbosity"] = text.get("verbosity")
    return model_options(chat)


def _tools(body: dict[str, Any]) -> ClientTools | None:
    """Flat Responses function tools and tool_choice, as Chat Completions ones."""
    raw = body.get("tools")
    converted: Any = raw
    if isinstance(raw, list):
        converted = []
        for spec in raw:
            if isinstance(spec, dict) and spec.get("type") == "function":
                fn = {
                    k: spec[k] for k in ("name", "description", "parameters", "strict") if k in spec
                }
                spec = {"type": "function", "function": fn}
            converted.append(spec)
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function" and "name" in choice:
        choice = {"type": "function", "function": {"name": choice["name"]}}
    chat = {
        "tools": converted,
        "tool_choice": choice,
        "parallel_tool_calls": body.get("parallel_tool_calls"),
    }
    return client_tools({k: v for k, v in chat.items() if v is not None})


def _output_text(output: Any, where: str) -> str:
    if isinstance(output, str):
        return output
    return collapse_content(output, where)


def _append_call(messages: list[dict[str, Any]], item: dict[str, Any], where: str) -> None:
    """A function_call item joins the assistant step before it, as one Chat Completions
    assistant message holds its text and its tool calls."""
    call_id, name = item.get("call_id"), item.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise bad_request(f"{where} needs `call_id` and `name` strings.", where)
    arguments = item.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {})
    (call,) = tool_calls_json([ToolCall(call_id, name, arguments)])
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        last.setdefault("tool_calls", []).append(call)
        last["content"] = last["content"] or None
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def input_messages(raw: Any, images: ImageSink | None = None) -> list[dict[str, Any]]:
    """`input` (a string or a list of items) as chat messages; `images` (vision on) takes
    the `input_image` parts of user messages."""
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    if not isinstance(raw, list) or not raw:
        raise bad_request("`input` must be a string or a non-empty list of input items.", "input")
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise bad_request(f"{where} must be an object.", where)
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise bad_request(
                    f"{where}.role must be user, assistant, system or developer; got {role!r}.",
                    f"{where}.role",
                )
            sink = images if role == "user" or images is None else _no_images(images)
            text = collapse_content(item.get("content"), f"{where}.content", sink)
            messages.append({"role": role, "content": text})
        elif kind == "function_call":
            _append_call(messages, item, where)
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise bad_request(f"{where}.call_id must be a string.", f"{where}.call_id")
            text = _output_text(item.get("output"), f"{where}.output")
            messages.append(tool_result(call_id, text))
        elif kind == "reasoning":
            continue  # the model's own reasoning summary: nothing to send back
        else:
            raise bad_request(
                f"{where} is a {kind!r} item; Hermes accepts message, function_call and "
                "function_call_output items.",
                where,
                "unsupported_input_item",
            )
    return messages


def _no_images(images: ImageSink) -> ImageSink:
    return ImageSink(ImageLimits(images.limits.max_bytes, 0))


def _split(convo: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str, Any]:
    """(history, new user message, tool results): trailing function_call_output items resume
    a paused turn (in a session they may come alone); else the last item is the user's."""
    if convo and convo[-1]["role"] == "tool":
        start = len(convo)
        while start > 0 and convo[start - 1]["role"] == "tool":
            start -= 1
        return convo[:start], "", convo[start:]
    if not convo or convo[-1]["role"] != "user" or not str(convo[-1]["content"]).strip():
        raise bad_request(
            "The last input item must be the user's new message (or function_call_output "
            "items answering the calls Hermes handed back).",
            "input",
            "no_user_message",
        )
    return convo[:-1], convo[-1]["content"], None


def _conversation(raw: Any) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        return str(raw["id"])
    raise bad_request('`conversation` must be an id string or {"id": "..."}.', "conversation")


def parse_responses_body(
    raw: bytes, *, default_model: str, image_limits: ImageLimits | None = None
) -> ResponsesCall:
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(
            f"The request body is not valid JSON: {exc}.", None, "invalid_json"
        ) from None
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object.", None, "invalid_json")
    _check_fields(body)
    if "input" not in body:
        raise bad_request("Missing `input`: send the user's message.", "input")
    options = _options(body)
    tools = _tools(body)
    images = ImageSink(image_limits) if image_limits is not None else None
    messages = input_messages(body["input"], images)
    instructions = body.get("instructions")
    systems = [instructions] if instructions else []
    systems += [m["content"] for m in messages if m["role"] in SYSTEM_ROLES and m["content"]]
    convo = [m for m in messages if m["role"] not in SYSTEM_ROLES]
    history, user_message, results = _split(convo)
    previous = body.get("previous_response_id")
    conversation = _conversation(body.get("conversation"))
    if previous is not None and conversation is not None:
        raise bad_request(
            "Send either `previous_response_id` or `conversation`, not both.", "conversation"
        )
    echo_keys = ("tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p")
    echo = {k: body.get(k) for k in (*echo_keys, "max_output_tokens", "text", "metadata", "user")}
    return ResponsesCall(
        model=body.get("model") or default_model,
        stream=bool(body.get("stream")),
        store=body.get("store") is not False,
        user_message=user_message,
        history=history,
        tool_results=results,
        instructions=instructions,
        system_extra="\n\n".join(systems) or None,
        options=options,
        client_tools=tools,
        previous_response_id=previous,
        conversation=conversation,
        echo=echo,
        images=images if images is not None and images.blobs else None,
    )


# ---------------------------------------------------------------------- output


def new_response_id() -> str:
    return f"resp_{uuid4_hex()}"


def usage_json(usage: Usage) -> dict[str, Any]:
    total = usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total,
    }


class ResponseBuilder:
    """Builds the response object (and its items) for one turn, ids fixed up front."""

    def __init__(self, call: ResponsesCall, response_id: str) -> None:
        self.call = call
        self.id = response_id
        self.created_at = int(time.time())
        self.message_id = f"msg_{uuid4_hex()}"
        self._final: dict[str, Any] | None = None

    def envelope(self, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        echo = self.call.echo
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": self.call.instructions,
            "model": self.call.model,
            "output": output,
            "parallel_tool_calls": echo.get("parallel_tool_calls") is not False,
            "previous_response_id": self.call.previous_response_id,
            "conversation": {"id": self.call.conversation} if self.call.conversation else None,
            "temperature": echo.get("temperature"),
            "top_p": echo.get("top_p"),
            "max_output_tokens": echo.get("max_output_tokens"),
            "tool_choice": echo.get("tool_choice") or "auto",
            "tools": echo.get("tools") or [],
            "text": echo.get("text") or {"format": {"type": "text"}},
            "metadata": echo.get("metadata") or {},
            "user": echo.get("user"),
            "store": self.call.store,
            "truncation": "disabled",
            "usage": None,
        }

    def message_item(self, text: str, status: str = "completed") -> dict[str, Any]:
        content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
        return {
            "type": "message",
            "id": self.message_id,
            "status": status,
            "role": "assistant",
            "content": content if status == "completed" else [],
        }

    @staticmethod
    def call_item(call_id: str, name: str, arguments: str, status: str = "completed") -> dict:
        return {
            "type": "function_call",
            "id": f"fc_{call_id}",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "status": status,
        }

    def output(self, result: TurnResult) -> list[dict[str, Any]]:
        items = [self.message_item(result.content)] if result.content else []
        items += [self.call_item(c.id, c.name, c.arguments) for c in result.tool_calls]
        return items

    def body(self, result: TurnResult) -> dict[str, Any]:
        """The completed response object (built once, so stored and sent are the same)."""
        if self._final is None:
            status = "incomplete" if result.finish_reason == "length" else "completed"
            final = self.envelope(status, self.output(result))
            if status == "incomplete":
                final["incomplete_details"] = {"reason": "max_output_tokens"}
            final["usage"] = usage_json(result.usage)
            self._final = final
        return self._final
