"""The Chat Completions wire format: parse a request body into a turn, build response objects.

Parsing is hand-written rather than a pydantic model so each refusal names the exact place
(`messages[2].content[1]`) and says what to send instead, and so a body holding a long
stateless history is parsed once by `json.loads` with no second validation pass.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.client_tools import ClientTools
from hermes.models.images import ImageLimits, ImageRefused, ImageSink
from hermes.models.types import ToolCall, Usage, tool_calls_json, tool_result
from hermes.randomid import uuid4_hex
from hermes.server.errors import APIError
from hermes.text import find_lone_surrogate, may_hold_surrogates

TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
SYSTEM_ROLES = frozenset({"system", "developer"})
KNOWN_ROLES = frozenset({"user", "assistant", "tool"}) | SYSTEM_ROLES

# The request model, in one place. Every top-level field a client may send is in exactly one
# of these; anything else is refused with a 400 naming it, as OpenAI does.
MODEL_OPTIONS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "reasoning_effort",
        "verbosity",
        "user",
        "response_format",
    }
)
"""Passed as given to every model call of the turn (`response_format` included: as on OpenAI,
it shapes the answer, while tool calls stay possible until the model answers)."""
TOOL_FIELDS = frozenset({"tools", "tool_choice", "parallel_tool_calls"})
ENVELOPE_FIELDS = frozenset({"model", "messages", "stream", "stream_options", "n"})
BOOKKEEPING_FIELDS = frozenset(
    {"store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier"}
)
"""OpenAI-platform bookkeeping (dashboard storage, tags, tiers, cache keys): they do not change
the answer, so they are accepted and not forwarded to endpoints that may reject them."""
REFUSED_FIELDS = {
    "logprobs": "Hermes does not return log probabilities; leave `logprobs` unset or false.",
    "top_logprobs": "Hermes does not return log probabilities; leave `top_logprobs` unset.",
    "audio": "Hermes answers in text only; remove `audio`.",
    "modalities": 'Hermes answers in text only; send `modalities: ["text"]` or leave it unset.',
    "prediction": "Predicted outputs are not supported; remove `prediction`.",
    "functions": "The legacy `functions` field is not supported; send `tools` instead.",
    "function_call": "The legacy `function_call` field is not supported; use `tool_choice`.",
    "web_search_options": "Hermes searches the web with its own tools; remove "
    "`web_search_options`.",
}
_HARMLESS_REFUSED_VALUES: dict[str, tuple[Any, ...]] = {
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "modalities": (None, ["text"]),
}
KNOWN_FIELDS = (
    MODEL_OPTIONS | TOOL_FIELDS | ENVELOPE_FIELDS | BOOKKEEPING_FIELDS | set(REFUSED_FIELDS)
)
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class ChatCall:
    """What a Chat Completions request asks of the agent."""

    model: str
    stream: bool
    user_message: str
    """The new user message ("" when the request resumes a turn with `tool_results`)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    system_extra: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    client_tools: ClientTools | None = None
    tool_results: list[dict[str, Any]] | None = None
    images: ImageSink | None = None
    """The images the request's messages carry (as marker lines in their text)."""


def bad_request(message: str, param: str | None, code: str = "invalid_value") -> APIError:
    return APIError(400, message, code=code, param=param)


IMAGE_PART_TYPES = frozenset({"image_url", "input_image"})
_DETAILS = (None, "auto", "low", "high")


def image_refused(exc: ImageRefused, param: str) -> APIError:
    return APIError(exc.status, str(exc), code=exc.code, param=param)


def _image_marker(part: dict[str, Any], here: str, images: ImageSink | None, count: int) -> str:
    """An image part as its marker line (`hermes.models.images`), or the 400 that says why not.

    Chat sends `{"image_url": {"url", "detail"}}` or a bare string; Responses sends
    `{"image_url": "...", "detail"}` or a `file_id`."""
    if images is None:
        raise bad_request(
            f"{here} is an image, and this Hermes does not send images to its model. If the "
            "model can see images, set `model.vision: true` in config.yaml (HERMES_VISION=1).",
            here,
            "vision_not_enabled",
        )
    if part.get("file_id") is not None:
        raise bad_request(
            f"{here} names an uploaded file; Hermes has no file store, so send the image as "
            "`image_url` (an http(s) or data:image/... URL).",
            here,
            "unsupported_content_type",
        )
    raw = part.get("image_url")
    url, detail = (raw.get("url"), raw.get("detail")) if isinstance(raw, dict) else (raw, None)
    detail = part.get("detail", detail)
    if detail not in _DETAILS:
        raise bad_request(
            f"{here}.detail must be auto, low or high.", f"{here}.detail", "invalid_content_part"
        )
    try:
        return images.marker(url, here, count)
    except ImageRefused as exc:
        raise image_refused(exc, here) from None


def collapse_content(content: Any, where: str, images: ImageSink | None = None) -> str:
    """Message content (string or list of parts) → text; non-text parts are refused by name.

    With `images` (a user message while `model.vision` is on) image parts become marker lines
    and their bytes join the sink; without, an image part is 400 `vision_not_enabled`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(
            f"{where} must be a string or a list of content parts, not {type(content).__name__}.",
            where,
        )
    texts: list[str] = []
    seen = 0
    for j, part in enumerate(content):
        here = f"{where}[{j}]"
        if not isinstance(part, dict):
            raise bad_request(
                f'{here} must be an object like {{"type": "text", "text": "..."}}.', here
            )
        kind = part.get("type")
        if kind in IMAGE_PART_TYPES:
            seen += 1
            texts.append(_image_marker(part, here, images, seen))
            continue
        if kind not in TEXT_PART_TYPES:
            raise bad_request(
                f"{here} is a {kind!r} part; Hermes passes text and images to the model, so "
                'send text parts (type "text") or image parts (type "image_url").',
                here,
                "unsupported_content_type",
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise bad_request(f"{here}.text must be a string.", f"{here}.text")
        texts.append(text)
    return "\n".join(texts)


def _check_fields(body: dict[str, Any]) -> None:
    """Unknown fields, and known ones Hermes cannot honour, are a 400 naming them."""
    unknown = sorted(set(body) - KNOWN_FIELDS)
    if unknown:
        names = ", ".join(f"`{u}`" for u in unknown)
        raise bad_request(
            f"Unrecognized request argument(s) {names}: Hermes does not support them; remove them.",
            unknown[0],
            "unknown_parameter",
        )
    for name, advice in REFUSED_FIELDS.items():
        if name in body and body[name] not in _HARMLESS_REFUSED_VALUES.get(name, (None,)):
            raise bad_request(f"`{name}` is not supported. {advice}", name, "unsupported_parameter")
    n = body.get("n")
    if n is not None and n != 1:
        raise bad_request("`n` must be 1: Hermes produces one answer per turn.", "n")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise bad_request("`stream` must be true or false.", "stream")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request("`model` must be a string.", "model")


def refuse_lone_surrogates(raw: bytes, body: Any) -> None:
    """A lone UTF-16 surrogate (`"\\ud800"`) cannot be stored or sent on as UTF-8: refuse it
    up front, naming the field, rather than fail after the model was called."""
    if not may_hold_surrogates(raw):
        return
    where = find_lone_surrogate(body)
    if where is not None:
        raise bad_request(
            f"`{where}` holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape), "
            "which is not valid Unicode text; send the character as a proper pair or UTF-8.",
            where,
            "invalid_unicode",
        )


# OpenAI's documented ranges for the sampling options: (low, high, integers only).
_RANGES: dict[str, tuple[float | None, float | None, bool]] = {
    "temperature": (0, 2, False),
    "top_p": (0, 1, False),
    "frequency_penalty": (-2, 2, False),
    "presence_penalty": (-2, 2, False),
    "max_tokens": (1, None, True),
    "max_completion_tokens": (1, None, True),
    "seed": (None, None, True),
}
_CHOICES = {
    "reasoning_effort": ("none", "minimal", "low", "medium", "high", "xhigh"),
    "verbosity": ("low", "medium", "high"),
}


def _check_option_ranges(options: dict[str, Any]) -> None:
    """Out-of-range sampling options are a 400 naming the field, as on OpenAI's API."""
    for name, (low, high, integer) in _RANGES.items():
        value = options.get(name)
        if value is None:
            continue
        kind = int if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind) or value != value:
            noun = "an integer" if integer else "a number"
            raise bad_request(f"`{name}` must be {noun}, not {value!r}.", name)
        if (low is not None and value < low) or (high is not None and value > high):
            span = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise bad_request(f"`{name}` is {value!r}; it must be {span}.", name)
    for name, allowed in _CHOICES.items():
        if name in options and options[name] not in allowed:
            raise bad_request(f"`{name}` must be one of {', '.join(allowed)}.", name)
    _check_stop_and_bias(options)


def _check_stop_and_bias(options: dict[str, Any]) -> None:
    stop = options.get("stop")
    if stop is not None and not (
        isinstance(stop, str)
        or (isinstance(stop, list) and len(stop) <= 4 and all(isinstance(x, str) for x in stop))
    ):
        raise bad_request("`stop` must be a string or a list of at most 4 strings.", "stop")
    bias = options.get("logit_bias")
    if bias is not None:
        if not isinstance(bias, dict) or not all(
            str(k).isdigit()
            and isinstance(v, int | float)
            and not isinstance(v, bool)
            and -100 <= v <= 100
            for k, v in bias.items()
        ):
            raise bad_request(
                "`logit_bias` must map token ids to numbers between -100 and 100.", "logit_bias"
            )
    user = options.get("user")
    if user is not None and not isinstance(user, str):
        raise bad_request("`user` must be a string.", "user")


def model_options(body: dict[str, Any]) -> dict[str, Any]:
    """The request's options for the model calls (None values are the same as absent)."""
    options = {k: body[k] for k in MODEL_OPTIONS if body.get(k) is not None}
    _check_option_ranges(options)
    response_format = options.get("response_format")
    if response_format is not None and (
        not isinstance(response_format, dict)
        or response_format.get("type") not in ("text", "json_object", "json_schema")
    ):
        raise bad_request(
            '`response_format` must be {"type": "text"}, {"type": "json_object"} or '
            '{"type": "json_schema", "json_schema": {...}}.',
            "response_format",
        )
    return options


def _tool_schema(i: int, spec: Any) -> dict[str, Any]:
    where = f"tools[{i}]"
    if not isinstance(spec, dict) or spec.get("type") != "function":
        kind = spec.get("type") if isinstance(spec, dict) else type(spec).__name__
        raise bad_request(
            f'{where} is a {kind!r} tool; Hermes accepts client tools of type "function" '
            '({"type": "function", "function": {"name": ..., "parameters": {...}}}).',
            where,
            "unsupported_tool_type",
        )
    fn = spec.get("function")
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise bad_request(
            f"{where}.function.name must be 1-64 letters, digits, _ or -; got {name!r}.",
            f"{where}.function.name",
        )
    params = fn.get("parameters") if isinstance(fn, dict) else None
    if params is not None and not isinstance(params, dict):
        raise bad_request(f"{where}.function.parameters must be a JSON schema object.", where)
    return {"type": "function", "function": fn}


def client_tools(body: dict[str, Any]) -> ClientTools | None:
    """`tools`, `tool_choice` and `parallel_tool_calls`, checked against each other."""
    raw = body.get("tools")
    choice = body.get("tool_choice")
    parallel = body.get("parallel_tool_calls")
    if raw is None and choice is None and parallel is None:
        return None
    if raw is not None and not isinstance(raw, list):
        raise bad_request("`tools` must be a list of function tools.", "tools")
    schemas = [_tool_schema(i, spec) for i, spec in enumerate(raw or [])]
    tools = ClientTools(schemas=schemas, choice=choice, parallel_calls=parallel)
    names = tools.names()
    if len(names) != len(schemas):
        raise bad_request("`tools` names the same function twice.", "tools")
    if parallel is not None and not isinstance(parallel, bool):
        raise bad_request("`parallel_tool_calls` must be true or false.", "parallel_tool_calls")
    if choice is None or choice in ("auto", "none", "required"):
        return tools
    fn = choice.get("function") if isinstance(choice, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(choice, dict) or choice.get("type") != "function" or name is None:
        raise bad_request(
            '`tool_choice` must be "auto", "none", "required" or '
            '{"type": "function", "function": {"name": ...}}.',
            "tool_choice",
        )
    if name not in names:
        raise bad_request(
            f"`tool_choice` names {name!r}, which is not one of the request's `tools`.",
            "tool_choice",
        )
    return tools


def _tool_calls(where: str, raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise bad_request(f"{where}.tool_calls must be a list.", f"{where}.tool_calls")
    calls = []
    for j, call in enumerate(raw):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(call.get("id"), str):
            raise bad_request(
                f"{where}.tool_calls[{j}] must be "
                '{"id": ..., "type": "function", "function": {"name": ..., "arguments": ...}}.',
                f"{where}.tool_calls[{j}]",
            )
        arguments = fn.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(ToolCall(call["id"], str(fn.get("name") or ""), arguments))
    return tool_calls_json(calls)


def _message(
    i: int, message: Any, ignore_client_tools: bool, images: ImageSink | None
) -> dict[str, Any] | None:
    """One request message normalised; None for client tool traffic that is being ignored."""
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise bad_request(f"{where} must be an object with `role` and `content`.", where)
    role = message.get("role")
    if role not in KNOWN_ROLES:
        raise bad_request(
            f"{where}.role must be one of system, developer, user, assistant, tool; got {role!r}.",
            f"{where}.role",
        )
    text = collapse_content(message.get("content"), f"{where}.content", _images_for(role, images))
    if role == "tool":
        if ignore_client_tools:
            return None
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str):
            raise bad_request(f"{where}.tool_call_id must be a string.", f"{where}.tool_call_id")
        return tool_result(call_id, text)
    if role == "assistant" and message.get("tool_calls") and not ignore_client_tools:
        calls = _tool_calls(where, message["tool_calls"])
        return {"role": "assistant", "content": text or None, "tool_calls": calls}
    return {"role": role, "content": text}


def _images_for(role: Any, images: ImageSink | None) -> ImageSink | None:
    """Images are taken in user messages only: an image part anywhere else is refused."""
    if images is None or role == "user":
        return images
    return ImageSink(ImageLimits(images.limits.max_bytes, 0))


def _split_turn(
    convo: list[tuple[int, dict[str, Any]]],
) -> tuple[list[dict[str, Any]], str, list[dict[str, Any]] | None]:
    """(history, new user message, tool results): the request's tail is the new turn."""
    if convo and convo[-1][1]["role"] == "tool":
        start = len(convo)
        while start > 0 and convo[start - 1][1]["role"] == "tool":
            start -= 1
        before = convo[start - 1][1] if start > 0 else {}
        if not before.get("tool_calls"):
            where = f"messages[{convo[start][0]}]"
            raise bad_request(
                f"{where} is a tool result that follows no assistant tool call.", where
            )
        return [m for _, m in convo[:start]], "", [m for _, m in convo[start:]]
    if not convo or convo[-1][1]["role"] != "user":
        where = f"messages[{convo[-1][0]}]" if convo else "messages"
        raise bad_request(
            "The last non-system message must be the user's new message (or the results "
            "of the tool calls Hermes handed back); it is the turn Hermes answers.",
            where,
            "no_user_message",
        )
    last_index, last = convo[-1]
    if not str(last["content"]).strip():
        raise bad_request(
            f"messages[{last_index}].content is empty.", f"messages[{last_index}].content"
        )
    return [m for _, m in convo[:-1]], last["content"], None


def parse_chat_body(
    raw: bytes,
    *,
    default_model: str,
    ignore_client_tools: bool,
    image_limits: ImageLimits | None = None,
) -> ChatCall:
    """Validate a /v1/chat/completions body; the last user message (or the trailing tool
    results) becomes the new turn, everything before it the history."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(
            f"The request body is not valid JSON: {exc}.", None, "invalid_json"
        ) from None
    except RecursionError:
        raise bad_request(
            "The request body is nested too deeply to be a chat request.", None, "invalid_json"
        ) from None
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object.", None, "invalid_json")
    refuse_lone_surrogates(raw, body)
    _check_fields(body)
    options = model_options(body)
    tools = None if ignore_client_tools else client_tools(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("`messages` must be a non-empty list of chat messages.", "messages")
    systems: list[str] = []
    convo: list[tuple[int, dict[str, Any]]] = []
    images = ImageSink(image_limits) if image_limits is not None else None
    for i, message in enumerate(messages):
        normal = _message(i, message, ignore_client_tools, images)
        if normal is None:
            continue
        if normal["role"] in SYSTEM_ROLES:
            if normal["content"].strip():
                systems.append(normal["content"])
        else:
            convo.append((i, normal))
    history, user_text, results = _split_turn(convo)
    return ChatCall(
        model=body.get("model") or default_model,
        stream=bool(body.get("stream")),
        user_message=user_text,
        history=history,
        system_extra="\n\n".join(systems) or None,
        options=options,
        client_tools=tools,
        tool_results=results,
        images=images if images is not None and images.blobs else None,
    )


# ---------------------------------------------------------------------- responses


def new_completion_id() -> str:
    return f"chatcmpl-{uuid4_hex()}"


def usage_dict(usage: Usage) -> dict[str, int]:
    total = usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": total,
    }


def completion_body(
    completion_id: str,
    model: str,
    content: str,
    finish_reason: str,
    usage: Usage,
    tool_calls: list[ToolCall] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["content"] = content or None
        message["tool_calls"] = tool_calls_json(tool_calls)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
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

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        """The caller's tool calls of a paused turn, whole, as OpenAI's first fragment of each."""
        delta = {
            "tool_calls": [{"index": i, **call} for i, call in enumerate(tool_calls_json(calls))]
        }
        return self.chunk(delta)

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
