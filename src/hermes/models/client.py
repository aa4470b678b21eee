"""The model client for any OpenAI-compatible chat-completions endpoint.

Hermes talks to whatever the user points it at (OpenAI, vLLM, llama.cpp, Ollama, LM Studio, a
proxy…). Everything above this module sees only `Completion` values and the typed errors of
`hermes.models.errors`, never SDK types, so the agent loop can decide what to do (retry later,
compress the context, tell the user) without knowing which server answered.

The jobs are split by module: `transport` (aiohttp for plain completions and the model list,
the openai SDK for streams), `retry` (one policy for both), `classify` (failures → typed errors), `streaming`
(chunks and bodies → `Completion`), `wire` (request bodies from cached message JSON). This
module composes them. A stream that breaks after the first byte is not retried: deltas have
already reached the caller, so replaying would duplicate them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from hermes import tls
from hermes.errors import HermesError
from hermes.models import sse
from hermes.models.classify import (
    PLACEHOLDER_API_KEY,
    AttemptFailed,
    Classifier,
    failure_from_sdk,
    stream_error,
)
from hermes.models.errors import (
    SETUP_HINT,
    ModelBadAnswerError,
    ModelNotConfiguredError,
    ModelStreamBrokenError,
    ModelTimeoutError,
)
from hermes.models.keepalive import Stream
from hermes.models.retry import REFUSED_DELAY, REFUSED_RETRIES, retry_delay
from hermes.models.streaming import StreamAccumulator, as_fields, completion_from_payload
from hermes.models.transport import HttpTransport, SdkTransport, aiohttp_module, openai_sdk
from hermes.models.types import Completion
from hermes.models.wire import encode_chat_body
from hermes.observability import tracing

__all__ = ["ModelClient", "OpenAICompatClient"]

T = TypeVar("T")

# Parameters the client sets itself; `options` cannot override them.
_RESERVED_PARAMS = frozenset({"model", "messages", "tools", "stream", "stream_options"})


class ModelClient(Protocol):
    """What Hermes needs from a model backend: the runtime, the agent loop and compression
    depend on this contract only; a plugin's `model_provider` returns one."""

    model: str | None
    """The model asked when a call names none (`/model` in `hermes chat` changes it)."""
    base_url: str | None
    """Where the backend is, for people to read (`/model`, `hermes doctor`); None if nowhere."""

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

    async def warm_up(self) -> None:
        """Load what the first call would (SDKs, connections); `hermes serve` calls it once
        /health is up. Doing nothing is fine."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class _StreamBroke(HermesError):
    """A started stream stopped (`how`: what happened), from either chunk source."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


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
        self._api_key = api_key or PLACEHOLDER_API_KEY
        self._classify = Classifier(base_url=base_url, api_key=self._api_key, timeout=timeout)
        # Both built on first use, and only when we have a URL: given None, the SDK would
        # silently fall back to OPENAI_BASE_URL or api.openai.com, hiding a config mistake.
        self._http: HttpTransport | None = None
        self._sdk: SdkTransport | None = None

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
                "No model name is configured; set HERMES_MODEL or model.name in config.yaml: "
                f"{SETUP_HINT}."
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
            http = self._http_transport()
            payload = await self._retrying(lambda: http.post(body))
            return completion_from_payload(payload, model_name)
        return await self._stream(body, on_delta, model_name)

    async def list_models(self) -> list[dict]:
        """Raw model entries as the server sent them, so callers can read e.g. `context_length`."""
        http = self._http_transport()
        return await self._retrying(http.list_models)

    async def warm_up(self) -> None:
        """Import the SDK off the event loop and open the HTTP pool, so the first turn waits
        for neither. Does nothing more when no endpoint is configured. Nothing at all for an
        endpoint our own connections carry (plain HTTP, no proxy: local model servers): the
        SDK would cost the server ~30 MB and most of a second of CPU for calls that never use
        it."""
        if self.base_url and self._http_transport().streams:
            return
        await asyncio.to_thread(openai_sdk)
        await asyncio.to_thread(aiohttp_module)
        if self.base_url:
            # the SDK client's TLS context loads a CA bundle: off the loop too (requests
            # that arrive meanwhile are served)
            await asyncio.to_thread(tls.openai_context)
            self._sdk_transport().client()
            self._http_transport().session()

    async def aclose(self) -> None:
        """Close both HTTP pools."""
        if self._sdk is not None:
            await self._sdk.close()
        if self._http is not None:
            await self._http.close()

    async def __aenter__(self) -> OpenAICompatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ requests

    def _require_endpoint(self) -> str:
        if not self.base_url:
            raise ModelNotConfiguredError(
                "No model endpoint is configured; set OPENAI_BASE_URL or model.base_url "
                f"in config.yaml: {SETUP_HINT}."
            )
        return self.base_url

    def _http_transport(self) -> HttpTransport:
        if self._http is None:
            self._http = HttpTransport(
                base_url=self._require_endpoint(),
                api_key=self._api_key,
                timeout=self.timeout,
                display_url=self._classify.display_url(),
            )
        return self._http

    def _sdk_transport(self) -> SdkTransport:
        if self._sdk is None:
            self._sdk = SdkTransport(
                base_url=self._require_endpoint(), api_key=self._api_key, timeout=self.timeout
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
            except AttemptFailed as failure:
                if failure.refused:  # nothing listens there: one quick retry, then say so
                    delay, limit = REFUSED_DELAY, min(self.max_retries, REFUSED_RETRIES)
                else:
                    delay, limit = retry_delay(retries_taken, failure.headers), self.max_retries
                out_of_time = deadline is not None and (
                    asyncio.get_running_loop().time() + delay >= deadline
                )
                if not failure.retryable or retries_taken >= limit or out_of_time:
                    raise self._classify.error(failure, attempts=retries_taken + 1) from None
                tracing.event("hermes.model.retry", kind=failure.kind, delay_s=delay)
                await asyncio.sleep(delay)
                retries_taken += 1
                tracing.annotate(**{"hermes.model.retries": retries_taken})
            except TimeoutError:
                tried = f" ({retries_taken + 1} attempts)" if retries_taken else ""
                raise ModelTimeoutError(
                    f"The model endpoint at {self._classify.display_url()} did not answer within "
                    f"{budget:g}s in total{tried} (model.total_timeout)."
                ) from None

    async def _stream(
        self, body: bytes, on_delta: Callable[[str], None], model_name: str
    ) -> Completion:
        """Open the stream (retried as a plain call is, until its first byte), then fold its
        chunks: over Hermes' own connections where they serve, else through the SDK."""
        http = self._http_transport()
        if http.streams:
            ours = await self._retrying(lambda: http.open_stream(body))
            return await self._fold(self._our_chunks(ours), on_delta, model_name)
        sdk = self._sdk_transport()
        theirs = await self._retrying(lambda: sdk.open_stream(body))
        return await self._fold(self._sdk_chunks(theirs), on_delta, model_name)

    async def _fold(
        self, chunks: AsyncGenerator[Any, None], on_delta: Callable[[str], None], model_name: str
    ) -> Completion:
        """One answer from a stream's chunks, text passed on as it comes. A stream that breaks
        after its first byte is not retried: deltas have reached the caller already."""
        where = f"The model endpoint at {self._classify.display_url()}"
        acc = StreamAccumulator(model=model_name)
        count = 0
        try:
            # closes the stream even if on_delta raises or we are cancelled
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    count += 1
                    text = acc.add(chunk)
                    if text:
                        on_delta(text)
        except (ValueError, TypeError, AttributeError) as exc:  # undecodable or mis-shaped event
            raise ModelBadAnswerError(
                f"{where} sent a malformed stream event (HTTP 200): {type(exc).__name__}; no "
                "answer was kept."
            ) from exc
        except _StreamBroke as broke:
            raise ModelStreamBrokenError(
                f"{where} stopped mid-answer: {broke.how} after the stream had started."
            ) from broke.__cause__
        if count == 0:
            raise ModelBadAnswerError(
                f"{where} answered HTTP 200 with an event stream that held no completion "
                "chunks; no answer was kept."
            )
        return acc.result()

    def _broke(self, kind: str) -> _StreamBroke:
        how = "the connection broke" if kind == "connect" else f"nothing came for {self.timeout:g}s"
        return _StreamBroke(how)

    async def _sdk_chunks(self, stream: Any) -> AsyncGenerator[Any, None]:
        """The SDK's chunk objects, its failures as ours."""
        openai = openai_sdk()
        try:
            async with stream:
                self._check_event_stream(getattr(stream, "response", None))
                async for chunk in stream:
                    yield chunk
        except openai.OpenAIError as exc:
            failure = failure_from_sdk(exc, openai)
            if failure.kind in ("connect", "timeout"):
                raise self._broke(failure.kind) from exc
            raise self._classify.error(failure, attempts=1) from exc

    async def _our_chunks(self, stream: Stream) -> AsyncGenerator[Any, None]:
        """The chunks of a stream over our own connections, by the SDK path's rules: `[DONE]`
        ends it, and an event holding `error` is the upstream's error."""
        try:
            self._check_event_stream(stream)
            async for event in sse.events(stream.pieces()):
                if event.data.startswith("[DONE]"):
                    await stream.read()  # the body's end, so the connection is reused
                    return
                data = json.loads(event.data)
                if not isinstance(data, dict):
                    raise TypeError(f"a stream event of type {type(data).__name__}")
                if data.get("error"):
                    raise self._classify.error(stream_error(data["error"]), attempts=1)
                yield as_fields(data)
        except TimeoutError as exc:
            raise self._broke("timeout") from exc
        except OSError as exc:
            raise self._broke("connect") from exc
        finally:
            stream.close()

    def _check_event_stream(self, response: Any) -> None:
        """Refuse a 200 answer that is not an event stream (an HTML login page from a proxy,
        a JSON body from a server that ignored `stream`): parsing it as SSE finds nothing and
        would pass for an empty answer."""
        kind = str(getattr(response, "headers", {}).get("content-type", "")).lower()
        if kind and "event-stream" not in kind:
            shown = kind.split(";")[0].strip()
            raise ModelBadAnswerError(
                f"The model endpoint at {self._classify.display_url()} answered HTTP 200 with "
                f"{shown} instead of an event stream; check model.base_url points at an "
                "OpenAI-compatible API."
            )
