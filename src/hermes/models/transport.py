"""The two ways Hermes reaches an OpenAI-compatible endpoint.

* `HttpTransport`: non-streamed completions, the server's hot path (every API turn, memory
  review, summaries, cron): one POST of the pre-encoded body and one `json.loads`, over
  `keepalive.KeepAliveClient` to a plain-HTTP endpoint, else (TLS, a proxy) over aiohttp.
  The SDK's per-request machinery costs more CPU than the rest of a turn (bench/api.py).
  Also `GET /models` (the context window's metadata): a one-shot `hermes chat -q` then never
  imports the SDK (~0.5-1 s of its start-up).
* `HttpTransport.open_stream`: streamed completions over the same connections of our own
  (the SDK's per-call machinery cost a streamed call six times a plain one's CPU).
* `SdkTransport`: streamed completions through the openai SDK (its SSE parsing, chunk and
  error types), imported on first use, where `HttpTransport` does not stream (TLS, a proxy).

Both send the same headers and report failures as `AttemptFailed` for the one classifier.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import urllib.request
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from yarl import URL

from hermes import __version__, tls
from hermes.models.classify import AttemptFailed, failure_from_sdk, nothing_listening
from hermes.models.errors import ModelBadAnswerError
from hermes.models.keepalive import KeepAliveClient, Stream

if TYPE_CHECKING:
    import aiohttp
    import openai

USER_AGENT = f"hermes/{__version__}"


def openai_sdk() -> ModuleType:
    """The openai SDK, imported on first use.

    It is over half of Hermes' import time (~0.6 s on a small machine); `hermes serve` answers
    /health without it and imports it in the background (`warm_up`), and CLI commands that
    never stream never pay for it.
    """
    return importlib.import_module("openai")


def aiohttp_module() -> ModuleType:
    """aiohttp, imported at first use: `hermes serve` answers /health before loading it."""
    return importlib.import_module("aiohttp")


def env_proxy(url: URL) -> str | None:
    """The proxy HTTP(S)_PROXY / NO_PROXY give for `url`, as the SDK would use: looked up once,
    because aiohttp's own `trust_env` re-reads the environment on every request."""
    if url.host and urllib.request.proxy_bypass(url.host):
        return None
    return urllib.request.getproxies().get(url.scheme)


class HttpTransport:
    """Non-streamed chat completions and the model list: over keep-alive connections of our
    own to a plain-HTTP endpoint with no proxy, else over one aiohttp session opened on first
    use."""

    def __init__(self, *, base_url: str, api_key: str, timeout: float, display_url: str) -> None:
        self.url = URL(base_url.rstrip("/") + "/chat/completions")
        self.models_url = URL(base_url.rstrip("/") + "/models")
        self.display_url = display_url
        self.timeout = timeout
        self.headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        self._proxy = env_proxy(self.url)
        self._session: aiohttp.ClientSession | None = None
        self._lean: KeepAliveClient | None = None
        if KeepAliveClient.serves(self.url, self._proxy):
            self._lean = KeepAliveClient(self.url, headers=self.headers, timeout=timeout)

    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            aiohttp = aiohttp_module()
            self._session = aiohttp.ClientSession(
                # Like the SDK: connect and each read may take `timeout`, not the whole call.
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=self.timeout, sock_read=self.timeout
                ),
            )
        return self._session

    async def post(self, body: bytes) -> Any:
        """One completion request: the decoded JSON answer, or `AttemptFailed`."""
        return await self._request("POST", self.url, body)

    async def list_models(self) -> list[dict[str, Any]]:
        """`GET /models`: the entries as sent (`{"data": [...]}`, or a bare list)."""
        answer = await self._request("GET", self.models_url, None)
        entries = answer.get("data") if isinstance(answer, dict) else answer
        if not isinstance(entries, list):
            raise ModelBadAnswerError(
                f"The model endpoint at {self.display_url} answered GET /models without a "
                "`data` list."
            )
        return [entry for entry in entries if isinstance(entry, dict)]

    @property
    def streams(self) -> bool:
        """Whether `open_stream` serves this endpoint (plain HTTP, no proxy); else the SDK."""
        return self._lean is not None

    async def open_stream(self, body: bytes) -> Stream:
        """POST a streamed completion over our own connections: the open `Stream` of a 2xx
        answer (the caller closes it), or `AttemptFailed`."""
        assert self._lean is not None, "only when `streams`"
        with _as_attempt_failures():
            stream = await self._lean.open_stream("POST", self.url.raw_path_qs, body)
        if stream.status < 400:
            return stream
        try:
            with _as_attempt_failures():
                raw = await stream.read()
        finally:
            stream.close()
        raise _status_failure(stream.status, stream.headers, raw)

    async def _request(self, method: str, url: URL, body: bytes | None) -> Any:
        status: int
        headers: Mapping[str, str]
        with _as_attempt_failures():
            if self._lean is not None:
                answer = await self._lean.request(method, url.raw_path_qs, body)
                raw, status, headers = answer.body, answer.status, answer.headers
            else:
                async with self.session().request(
                    method, url, data=body, headers=self.headers, proxy=self._proxy
                ) as resp:
                    raw = await resp.read()
                    status, headers = resp.status, resp.headers
        if status >= 400:
            raise _status_failure(status, headers, raw)
        decoded = _json_or_none(raw)
        if decoded is None:
            raise ModelBadAnswerError(
                f"The model endpoint at {self.display_url} answered HTTP {status} with a body "
                "that is not JSON."
            )
        return decoded

    async def close(self) -> None:
        if self._lean is not None:
            self._lean.close()
        if self._session is not None:
            await self._session.close()
            self._session = None


@contextlib.contextmanager
def _as_attempt_failures() -> Iterator[None]:
    """A failed exchange as the `AttemptFailed` the retry policy reads."""
    try:
        yield
    except TimeoutError as exc:  # ours, and aiohttp's ServerTimeoutError
        raise AttemptFailed("timeout") from exc
    except OSError as exc:  # refused, reset, or the answer broken off
        raise AttemptFailed("connect", refused=nothing_listening(exc)) from exc
    except Exception as exc:
        if isinstance(exc, aiohttp_module().ClientError):  # evaluated on an error only
            raise AttemptFailed("connect", refused=nothing_listening(exc)) from exc
        raise


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None


def _status_failure(status: int, headers: Mapping[str, str], raw: bytes) -> AttemptFailed:
    """An HTTP error answer, with its body decoded if it is JSON (else its text)."""
    decoded = _json_or_none(raw)
    body_seen = decoded if decoded is not None else raw.decode("utf-8", errors="replace")
    return AttemptFailed("status", status=status, headers=headers, body=body_seen)


class SdkTransport:
    """Streamed completions through the openai SDK (retries are the client's)."""

    def __init__(self, *, base_url: str, api_key: str, timeout: float) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self._client: openai.AsyncOpenAI | None = None

    def client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            sdk = openai_sdk()
            self._client = sdk.AsyncOpenAI(
                base_url=self.base_url,
                api_key=self.api_key,
                timeout=self.timeout,
                max_retries=0,  # the client applies the one retry policy to both paths
                # The same headers as the aiohttp path: our User-Agent, and none of the
                # organisation/project headers the SDK would add from OPENAI_ORG_ID /
                # OPENAI_PROJECT_ID, settings Hermes does not have.
                default_headers={
                    "User-Agent": USER_AGENT,
                    "OpenAI-Organization": sdk.Omit(),
                    "OpenAI-Project": sdk.Omit(),
                },
                http_client=sdk.DefaultAioHttpClient(verify=tls.openai_context()),
            )
        return self._client

    async def open_stream(self, body: bytes) -> Any:
        """POST a streamed completion; the SDK's async stream of chunks, or `AttemptFailed`."""
        sdk = openai_sdk()
        types = importlib.import_module("openai.types.chat")
        try:
            return await self.client().post(
                "/chat/completions",
                content=body,
                cast_to=types.ChatCompletion,
                stream=True,
                stream_cls=sdk.AsyncStream[types.ChatCompletionChunk],
            )
        except sdk.OpenAIError as exc:
            raise failure_from_sdk(exc, sdk) from exc

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
