"""Model client for any OpenAI-compatible chat-completions endpoint.

Hermes talks to whatever the user points it at (OpenAI, vLLM, llama.cpp, Ollama,
LM Studio, a proxy...). Everything above this module sees only `Completion` values
and the typed errors from `hermes.models.errors`, never SDK types, so the agent
loop can decide what to do (retry later, compress the context, tell the user)
without knowing which server answered.

Two paths, one behaviour:

* streamed completions and `GET /models` go through the openai SDK (its SSE parsing,
  chunk types and error types);
* non-streamed completions, the server's hot path (every API turn, memory review, summaries,
  cron), are one aiohttp POST of the pre-encoded body and one `json.loads`. The SDK's
  per-request machinery (option models, URL and header rebuilding, the httpx layers over
  aiohttp) cost more CPU than everything else in a turn put together (bench/api.py).

Both paths share one retry policy (`hermes.models.retry`), one classification of failures
into typed errors, and the same request headers. A stream that breaks after the first byte
is not retried: deltas have already reached the caller, so replaying would duplicate them.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import aiohttp
from yarl import URL

from hermes import __version__
from hermes.models.errors import (
    ContextLengthExceededError,
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelNotConfiguredError,
    ModelRateLimitError,
    ModelUnavailableError,
)
from hermes.models.retry import retry_delay, should_retry_status
from hermes.models.types import Completion, ToolCall, Usage
from hermes.models.wire import encode_chat_body

if TYPE_CHECKING:
    import openai

__all__ = ["ModelClient", "OpenAICompatClient"]

T = TypeVar("T")


def _openai() -> ModuleType:
    """The openai SDK, imported on first use.

    It is over half of Hermes' import time (~0.6 s on a small machine); `hermes serve` answers
    /health without it and imports it in the background (`warm_up`), and CLI commands that
    never stream never pay for it.
    """
    return importlib.import_module("openai")


# Local servers accept any bearer (or none); the SDK insists on a non-empty key.
_PLACEHOLDER_API_KEY = "not-needed"

_USER_AGENT = f"hermes/{__version__}"

# Phrases providers use when the prompt does not fit the window. Matched lower-cased.
_CONTEXT_PHRASES: tuple[str, ...] = (
    "maximum context length",
    "context length",
    "context_length_exceeded",
    "context window",
    "context size",  # llama.cpp: "exceeds the available context size"
    "too many tokens",
    "prompt is too long",
)

# Ways providers spell the window size in that message. First match wins.
_LIMIT_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"maximum context length (?:is|of)\s+([\d,_]+)", re.I),
    re.compile(r"context (?:window|length|size) (?:is|of)\s+([\d,_]+)", re.I),
    re.compile(r"([\d,_]+)[- ]token (?:context|limit|window)", re.I),
    re.compile(r">\s*([\d,_]+)\s*(?:tokens?\s*)?maximum", re.I),  # "210000 tokens > 200000 maximum"
    re.compile(r"(?:limit|maximum) (?:is|of)\s+([\d,_]+)\s*tokens", re.I),
)

# Things that look like provider secrets, in case an upstream error echoes one back.
_SECRET_LIKE = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-*]{6,}")

_MAX_UPSTREAM_CHARS = 300

# Parameters the client sets itself; `options` cannot override them.
_RESERVED_PARAMS = frozenset({"model", "messages", "tools", "stream", "stream_options"})


class ModelClient(Protocol):
    """What the agent loop needs from a model backend; lets tests and other backends swap in."""

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        model: str | None = None,
        on_delta: Callable[[str], None] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        """Run one chat completion; stream text to `on_delta` when given.

        `options` are further Chat Completions parameters (sampling, `stop`, `seed`,
        `response_format`, `tool_choice`, ...) sent as given; `max_tokens` and `temperature`
        override theirs."""
        ...

    async def list_models(self) -> list[dict]:
        """Raw entries from GET /models, extra fields (e.g. context_length) kept."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class _AttemptFailed(Exception):
    """One request that did not produce an answer, reduced to what classification needs.

    `kind` is "status" (an HTTP error status), "timeout", "connect" or "stream" (an error
    event inside a 200 stream); `body` is the error JSON (outer or unwrapped) or raw text.
    """

    def __init__(
        self,
        kind: str,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        message: str = "",
        code: str | None = None,
    ) -> None:
        super().__init__(kind, status)
        self.kind = kind
        self.status = status
        self.headers: Mapping[str, str] = headers or {}
        self.body = body
        self.message = message
        self.code = code

    @property
    def retryable(self) -> bool:
        if self.kind in ("timeout", "connect"):
            return True
        if self.kind == "status" and self.status is not None:
            return should_retry_status(self.status, self.headers)
        return False


class OpenAICompatClient:
    """`ModelClient` for any OpenAI-compatible base URL (aiohttp + the openai SDK for streams)."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str | None,
        timeout: float = 120.0,
        max_retries: int = 3,
        total_timeout: float | None = None,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.total_timeout = total_timeout
        # Kept to authenticate and to scrub it out of error messages; never logged or formatted.
        self._api_key = api_key or _PLACEHOLDER_API_KEY
        self._headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": _USER_AGENT,
        }
        # Both built on first use, and only when we have a URL: given None, the SDK would
        # silently fall back to OPENAI_BASE_URL or api.openai.com, hiding a config mistake.
        self._http: aiohttp.ClientSession | None = None
        self._completions_url: URL | None = None
        self._proxy: str | None = None
        self._sdk: openai.AsyncOpenAI | None = None

    # ------------------------------------------------------------------ public API

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        model: str | None = None,
        on_delta: Callable[[str], None] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        """One chat completion, normalised; raises only `ModelError` subclasses for upstream failures."""
        self._require_endpoint()
        model_name = model or self.model
        if not model_name:
            raise ModelNotConfiguredError(
                "No model name is configured; set HERMES_MODEL or model.name in config.yaml."
            )
        params: dict[str, Any] = {"model": model_name}
        if options:
            params.update((k, v) for k, v in options.items() if k not in _RESERVED_PARAMS)
        if max_tokens is not None:
            # `max_tokens` rather than `max_completion_tokens`: it is what compatible servers accept.
            params["max_tokens"] = max_tokens
        if temperature is not None:
            params["temperature"] = temperature
        if on_delta is not None:
            params["stream"] = True
            params["stream_options"] = {"include_usage": True}
        # Encoded once from cached per-message JSON (see hermes.models.wire) and sent as is.
        body = encode_chat_body(params, messages, tools)

        if on_delta is None:
            payload = await self._retrying(lambda: self._post_once(body))
            return _from_payload(payload, model_name)
        return await self._stream(body, on_delta, model_name)

    async def list_models(self) -> list[dict]:
        """Raw model entries as the server sent them, so callers can read e.g. `context_length`."""
        sdk = self._require_sdk()

        async def once() -> Any:
            try:
                return await sdk.models.list()
            except _openai().OpenAIError as exc:
                raise _failure_from_sdk(exc) from exc

        page = await self._retrying(once)
        return [entry.to_dict(mode="json") for entry in page.data]

    async def warm_up(self) -> None:
        """Import the SDK off the event loop and open the HTTP pool, so the first turn waits
        for neither. Does nothing more when no endpoint is configured."""
        await asyncio.to_thread(_openai)
        if self.base_url:
            self._require_sdk()
            self._require_http()

    async def aclose(self) -> None:
        """Close both HTTP pools."""
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def __aenter__(self) -> OpenAICompatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ requests

    def _require_endpoint(self) -> str:
        if not self.base_url:
            raise ModelNotConfiguredError(
                "No model endpoint is configured; set OPENAI_BASE_URL or model.base_url "
                "in config.yaml (for example http://localhost:11434/v1)."
            )
        return self.base_url

    def _require_http(self) -> aiohttp.ClientSession:
        if self._http is None:
            base = self._require_endpoint()
            self._completions_url = URL(base.rstrip("/") + "/chat/completions")
            self._proxy = _env_proxy(self._completions_url)
            self._http = aiohttp.ClientSession(
                # Like the SDK: connect and each read may take `timeout`, not the whole call.
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=self.timeout, sock_read=self.timeout
                ),
            )
        return self._http

    def _require_sdk(self) -> openai.AsyncOpenAI:
        if self._sdk is None:
            base = self._require_endpoint()
            sdk = _openai()
            self._sdk = sdk.AsyncOpenAI(
                base_url=base,
                api_key=self._api_key,
                timeout=self.timeout,
                max_retries=0,  # `_retrying` applies the one retry policy to both paths
                # The same headers as the aiohttp path: our User-Agent, and none of the
                # organisation/project headers the SDK would add from OPENAI_ORG_ID /
                # OPENAI_PROJECT_ID, settings Hermes does not have.
                default_headers={
                    "User-Agent": _USER_AGENT,
                    "OpenAI-Organization": sdk.Omit(),
                    "OpenAI-Project": sdk.Omit(),
                },
                http_client=sdk.DefaultAioHttpClient(),
            )
        return self._sdk

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run `attempt` until it succeeds, fails for good, the retries run out, or the
        `total_timeout` budget is spent (a stalled upstream cannot hold a caller for
        `timeout × retries` plus back-off)."""
        retries_taken = 0
        budget = self.total_timeout
        deadline = None if budget is None else asyncio.get_running_loop().time() + budget
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    return await attempt()
            except _AttemptFailed as failure:
                delay = retry_delay(retries_taken, failure.headers)
                out_of_time = deadline is not None and (
                    asyncio.get_running_loop().time() + delay >= deadline
                )
                if not failure.retryable or retries_taken >= self.max_retries or out_of_time:
                    raise self._error(failure, attempts=retries_taken + 1) from None
                await asyncio.sleep(delay)
                retries_taken += 1
            except TimeoutError:
                tried = f" ({retries_taken + 1} attempts)" if retries_taken else ""
                raise ModelUnavailableError(
                    f"The model endpoint at {self._display_url()} did not answer within "
                    f"{budget:g}s in total{tried} (model.total_timeout).",
                    reason="timeout",
                ) from None

    async def _post_once(self, body: bytes) -> Any:
        """One non-streamed request: the decoded JSON answer, or `_AttemptFailed`."""
        http = self._require_http()
        try:
            assert self._completions_url is not None  # set by _require_http
            async with http.post(
                self._completions_url, data=body, headers=self._headers, proxy=self._proxy
            ) as resp:
                raw = await resp.read()
                status, headers = resp.status, resp.headers
        except TimeoutError as exc:  # aiohttp's ServerTimeoutError is one too
            raise _AttemptFailed("timeout") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise _AttemptFailed("connect") from exc
        text = raw.decode("utf-8", errors="replace")
        try:
            decoded: Any = json.loads(text)
        except ValueError:
            decoded = None
        if status >= 400:
            raise _AttemptFailed(
                "status",
                status=status,
                headers=headers,
                body=decoded if decoded is not None else text,
            )
        if decoded is None:
            raise ModelUnavailableError(
                f"The model endpoint at {self._display_url()} answered HTTP {status} with a body "
                "that is not JSON.",
                reason="bad_answer",
            )
        return decoded

    async def _stream(
        self, body: bytes, on_delta: Callable[[str], None], model_name: str
    ) -> Completion:
        sdk = self._require_sdk()
        openai = _openai()
        types = importlib.import_module("openai.types.chat")

        async def open_stream() -> Any:
            try:
                return await sdk.post(
                    "/chat/completions",
                    content=body,
                    cast_to=types.ChatCompletion,
                    stream=True,
                    stream_cls=openai.AsyncStream[types.ChatCompletionChunk],
                )
            except openai.OpenAIError as exc:
                raise _failure_from_sdk(exc) from exc

        stream = await self._retrying(open_stream)
        acc = _StreamAccumulator(model=model_name)
        chunks = 0
        try:
            # `async with` closes the response even if on_delta raises or we are cancelled.
            async with stream:
                self._check_event_stream(stream)
                async for chunk in stream:
                    chunks += 1
                    text = acc.add(chunk)
                    if text:
                        on_delta(text)
        except (ValueError, TypeError, AttributeError) as exc:  # undecodable or mis-shaped event
            raise ModelUnavailableError(
                f"The model endpoint at {self._display_url()} sent a malformed stream event "
                f"(HTTP 200): {type(exc).__name__}; no answer was kept.",
                reason="bad_answer",
            ) from exc
        except openai.OpenAIError as exc:
            failure = _failure_from_sdk(exc)
            if failure.kind in ("connect", "timeout"):
                how = (
                    "the connection broke"
                    if failure.kind == "connect"
                    else f"nothing came for {self.timeout:g}s"
                )
                raise ModelUnavailableError(
                    f"The model endpoint at {self._display_url()} stopped mid-answer: {how} "
                    "after the stream had started.",
                    reason="broken_stream",
                ) from exc
            raise self._error(failure, attempts=1) from exc
        if chunks == 0:
            raise ModelUnavailableError(
                f"The model endpoint at {self._display_url()} answered HTTP 200 with an event "
                "stream that held no completion chunks; no answer was kept.",
                reason="bad_answer",
            )
        return acc.result()

    def _check_event_stream(self, stream: Any) -> None:
        """Refuse a 200 answer that is not an event stream (an HTML login page from a proxy,
        a JSON body from a server that ignored `stream`): parsing it as SSE finds nothing and
        would pass for an empty answer."""
        response = getattr(stream, "response", None)
        kind = str(getattr(response, "headers", {}).get("content-type", "")).lower()
        if kind and "event-stream" not in kind:
            shown = kind.split(";")[0].strip()
            raise ModelUnavailableError(
                f"The model endpoint at {self._display_url()} answered HTTP 200 with {shown} "
                "instead of an event stream; check model.base_url points at an "
                "OpenAI-compatible API.",
                reason="bad_answer",
            )

    # ------------------------------------------------------------------ errors

    def _error(self, failure: _AttemptFailed, *, attempts: int) -> ModelError:
        """The typed error the agent loop acts on, with a message that names the upstream problem."""
        where = f"The model endpoint at {self._display_url()}"
        tried = f" ({attempts} attempts)" if attempts > 1 else ""

        if failure.kind == "timeout":
            return ModelUnavailableError(
                f"{where} did not answer within {self.timeout:g}s{tried}, so there is no status code.",
                reason="timeout",
            )
        if failure.kind == "connect":
            return ModelUnavailableError(
                f"{where} could not be reached{tried}: connection failed, so there is no status code.",
                reason="unreachable",
            )
        detail = self._upstream_detail(failure)
        if failure.kind == "stream" or failure.status is None:
            # An `error` event inside an otherwise-200 stream: there is no status code to go on.
            if _is_context_error(failure):
                return ContextLengthExceededError(
                    f"{where} said mid-stream that the prompt does not fit the context window"
                    f" (HTTP 200){detail}.",
                    limit=_context_limit(failure),
                    status_code=None,
                )
            return ModelUnavailableError(
                f"{where} reported an error mid-stream (HTTP 200){detail}.",
                reason="stream_error",
            )

        status = failure.status
        if status in (401, 403):
            return ModelAuthError(
                f"{where} rejected the API key with HTTP {status}{detail}.", status_code=status
            )
        if status == 429:
            return ModelRateLimitError(
                f"{where} kept rate-limiting the request with HTTP 429{tried}{detail}.",
                status_code=status,
            )
        if 400 <= status < 500 and _is_context_error(failure):
            return ContextLengthExceededError(
                f"{where} said the prompt does not fit the context window, HTTP {status}{detail}.",
                limit=_context_limit(failure),
                status_code=status,
            )
        if 400 <= status < 500:
            return ModelBadRequestError(
                f"{where} refused the request with HTTP {status}{detail}.", status_code=status
            )
        return ModelUnavailableError(
            f"{where} failed with HTTP {status}{tried}{detail}.", status_code=status
        )

    def _display_url(self) -> str:
        """The base URL without any user:password@ part."""
        return re.sub(r"//[^/@]*@", "//", self.base_url or "(not configured)")

    def _upstream_detail(self, failure: _AttemptFailed) -> str:
        """': <upstream message>' trimmed to one clause, or '' when the server said nothing."""
        message = _error_field(failure.body, "message") or ""
        if not message and isinstance(failure.body, str):
            message = failure.body
        message = self._scrub(" ".join(message.split())).rstrip(".")
        if not message:
            return ""
        if len(message) > _MAX_UPSTREAM_CHARS:
            message = message[: _MAX_UPSTREAM_CHARS - 3] + "..."
        return f': "{message}"'

    def _scrub(self, text: str) -> str:
        """Remove our key (and anything key-shaped) in case the upstream echoed it back."""
        if self._api_key and self._api_key != _PLACEHOLDER_API_KEY:
            text = text.replace(self._api_key, "***")
        return _SECRET_LIKE.sub(r"\1-***", text)


# ---------------------------------------------------------------------- streaming


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _StreamAccumulator:
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
            self.usage = _usage(chunk.usage)
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


# ---------------------------------------------------------------------- helpers


def _from_payload(payload: Any, model_name: str) -> Completion:
    """A non-streamed chat.completion (plain JSON) as a Completion; odd shapes are upstream errors."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    choice: Any = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelUnavailableError(
            "The model endpoint returned a completion with no choices (HTTP 200).",
            reason="bad_answer",
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
        usage=_usage_from_json(payload.get("usage")),
        model=payload.get("model") or model_name,
    )


def _usage_from_json(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    prompt = _int(raw.get("prompt_tokens"))
    completion = _int(raw.get("completion_tokens"))
    total = _int(raw.get("total_tokens")) or prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    prompt = getattr(raw, "prompt_tokens", None) or 0
    completion = getattr(raw, "completion_tokens", None) or 0
    total = getattr(raw, "total_tokens", None) or prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _env_proxy(url: URL) -> str | None:
    """The proxy HTTP(S)_PROXY / NO_PROXY give for `url`, as the SDK would use: looked up once,
    because aiohttp's own `trust_env` re-reads the environment on every request."""
    if url.host and urllib.request.proxy_bypass(url.host):
        return None
    return urllib.request.getproxies().get(url.scheme)


def _failure_from_sdk(exc: openai.OpenAIError) -> _AttemptFailed:
    """An SDK exception as the same `_AttemptFailed` the aiohttp path raises."""
    openai = _openai()
    if isinstance(exc, openai.APITimeoutError) and not _refused(exc):
        return _AttemptFailed("timeout")
    if isinstance(exc, openai.APIConnectionError):
        return _AttemptFailed("connect")
    if isinstance(exc, openai.APIStatusError):
        return _AttemptFailed(
            "status",
            status=exc.status_code,
            headers=exc.response.headers,
            body=exc.body,
            message=exc.message,
            code=exc.code,
        )
    if isinstance(exc, openai.APIError):
        return _AttemptFailed("stream", body=exc.body, message=exc.message, code=exc.code)
    return _AttemptFailed("connect", message=str(exc))


def _refused(exc: BaseException) -> bool:
    """True when a 'timeout' was really a failed connect (the aiohttp transport reports
    refused connections, and servers that hang up without answering, as connect timeouts);
    the cause chain still holds the OSError or aiohttp's disconnect error."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError):
            return True
        if isinstance(cause, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _error_field(body: Any, name: str) -> str | None:
    """A field of the upstream error object, whether `{"error": ...}` was unwrapped or not."""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and name in inner:
            body = inner
        value = body.get(name)
        if value is not None:
            return str(value)
    return None


def _error_text(failure: _AttemptFailed) -> str:
    parts = [
        failure.message,
        _error_field(failure.body, "message") or "",
        _error_field(failure.body, "type") or "",
    ]
    if isinstance(failure.body, str):
        parts.append(failure.body)
    elif failure.body is not None:
        parts.append(json.dumps(failure.body, ensure_ascii=False))
    return " ".join(parts).lower()


def _is_context_error(failure: _AttemptFailed) -> bool:
    code = (failure.code or _error_field(failure.body, "code") or "").lower()
    if code == "context_length_exceeded":
        return True
    text = _error_text(failure)
    return "exceed_context_size" in text or any(p in text for p in _CONTEXT_PHRASES)


def _context_limit(failure: _AttemptFailed) -> int | None:
    """The window size the provider named, if it named one."""
    # llama.cpp puts it in the body rather than the message.
    n_ctx = _error_field(failure.body, "n_ctx")
    if n_ctx and n_ctx.isdigit():
        return int(n_ctx)
    text = " ".join([_error_field(failure.body, "message") or "", failure.message])
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(text)
        if match:
            digits = re.sub(r"[,_]", "", match.group(1))
            if digits.isdigit():
                return int(digits)
    return None
