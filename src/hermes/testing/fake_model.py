"""A scripted OpenAI-compatible HTTP server for tests and benchmarks.

Why a real server instead of mocking the SDK: the behaviour we care about (retries,
timeouts, SSE parsing, keep-alive, auth headers) lives in the HTTP stack, and a
mock would test our assumptions about it rather than the stack itself. It ships in
the package so benchmarks can drive Hermes against it without a GPU.

    with FakeModel() as fake:
        fake.enqueue(Text("hello"), ToolCalls([("search", {"q": "x"})]))
        client = OpenAICompatClient(base_url=fake.base_url, api_key=None, model="m")
        ...
        fake.assert_complete()

Each POST /v1/chat/completions consumes the first queued response whose `when`
predicate accepts the request body. Nothing queued -> `fake.default`, else a 500
that also makes `assert_complete()` fail.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias
from urllib.parse import urlsplit

from hermes.errors import HermesError

__all__ = [
    "ContextLengthError",
    "Drop",
    "Error",
    "FakeModel",
    "Hang",
    "Raw",
    "RecordedRequest",
    "Response",
    "Text",
    "ToolCalls",
]


# ---------------------------------------------------------------------- script items


@dataclass(frozen=True)
class Text:
    """A plain assistant message; streamed in `chunk_chars` pieces when the client asks for SSE."""

    text: str
    chunk_chars: int = 8
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    delay: float = 0.0
    """Seconds between SSE chunks (0 = send the whole stream in one write)."""


@dataclass(frozen=True)
class ToolCalls:
    """One or more parallel function calls. `args` may be a dict or raw (possibly broken) JSON text."""

    calls: list[tuple[str, dict | str]]
    content: str | None = None
    chunk_chars: int = 8
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def __post_init__(self) -> None:
        # Accept a single ("name", {...}) tuple as shorthand for a one-element list.
        calls: Any = self.calls
        if isinstance(calls, tuple) and len(calls) == 2 and isinstance(calls[0], str):
            object.__setattr__(self, "calls", [calls])
        else:
            object.__setattr__(self, "calls", list(calls))


@dataclass(frozen=True)
class Error:
    """An OpenAI-style JSON error with the given status (and optional retry-after-ms header)."""

    status: int
    message: str = "fake model: scripted error"
    code: str | None = None
    retry_after_ms: int | None = None


@dataclass(frozen=True)
class ContextLengthError:
    """The 400 OpenAI returns when the prompt does not fit the window."""

    limit: int = 8192


@dataclass(frozen=True)
class Hang:
    """Wait `seconds` (interrupted by stop()), then answer with `then` (default: empty Text)."""

    seconds: float
    then: Response | None = None


@dataclass(frozen=True)
class Raw:
    """Exactly these bytes, for malformed-response tests."""

    status: int
    body: str
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drop:
    """Close the connection without answering (an upstream that crashed or was cut off)."""


Response: TypeAlias = Text | ToolCalls | Error | ContextLengthError | Hang | Raw | Drop
Predicate: TypeAlias = Callable[[dict], bool]
Default: TypeAlias = Response | Callable[[dict], Response] | None


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as the fake saw it. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict


@dataclass
class _Entry:
    response: Response
    when: Predicate | None


class _Aborted(HermesError):
    """The fake is stopping; drop the connection without answering."""


# ---------------------------------------------------------------------- server


class FakeModel:
    """Scripted OpenAI-compatible server on 127.0.0.1:<random port>, served from a daemon thread."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model_name: str = "fake-model",
        context_length: int | None = 128000,
        default: Default = None,
        port: int = 0,
    ) -> None:
        self._bind_port = port
        self.api_key = api_key
        self.model_name = model_name
        self.context_length = context_length
        self.default: Default = default
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._script: list[_Entry] = []
        self._records: list[RecordedRequest] = []
        self._problems: list[str] = []
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._port: int | None = None  # kept after stop() so base_url stays usable
        self._thread: threading.Thread | None = None
        self.transcripts: list[str] = []
        """What `/v1/audio/transcriptions` answers, in order (then "fake transcript")."""
        self.audio: list[dict[str, Any]] = []
        """Each transcription request: model, file name, content type and size."""
        self.speech: list[dict[str, Any]] = []
        """Each `/v1/audio/speech` request body (model, input, voice, response_format)."""
        self.vision = False
        """Whether GET /models says the model takes images (OpenRouter's `architecture`)."""
        self.speech_status = 200
        """Set to an error status to make `/v1/audio/speech` fail (a TTS outage)."""

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> FakeModel:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", self._bind_port), _Handler)
        server.fake = self
        self._server = server
        self._port = server.server_port
        self._thread = threading.Thread(
            target=server.serve_forever,
            # stop() waits up to one poll for serve_forever to notice: tests start and stop
            # a fake each, so a short poll keeps that wait out of every test's time
            kwargs={"poll_interval": 0.01},
            name=f"fake-model:{server.server_port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, interrupt hangs, drop open connections, free the port. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()  # returns once serve_forever has exited: no more accepts
        server.drop_connections()  # wake handler threads blocked on keep-alive reads
        server.server_close()  # closes the listener and joins handler threads
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeModel has not been started")
        return self._port

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:<port>/v1; still valid after stop(), for connection-refused tests."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ---------------------------------------------------------------- scripting

    def enqueue(self, *responses: Response, when: Predicate | None = None) -> FakeModel:
        """Append responses to the script; `when` restricts which requests may consume them."""
        with self._lock:
            self._script.extend(_Entry(r, when) for r in responses)
        return self

    @property
    def pending(self) -> list[Response]:
        """Script items not consumed yet."""
        with self._lock:
            return [e.response for e in self._script]

    def reset(self) -> None:
        """Forget the script, the recorded requests and the problems: a long-lived fake
        (one per test module) starts each test clean."""
        with self._lock:
            self._script.clear()
            self._records.clear()
            self._problems.clear()

    # ---------------------------------------------------------------- inspection

    @property
    def requests(self) -> list[dict]:
        """Parsed JSON bodies of every request received, in order ({} for bodiless GETs)."""
        with self._lock:
            return [r.body for r in self._records]

    @property
    def headers(self) -> list[dict[str, str]]:
        """Headers of every request, parallel to `requests` (names lower-cased)."""
        with self._lock:
            return [r.headers for r in self._records]

    @property
    def records(self) -> list[RecordedRequest]:
        """Method, path, headers and body of every request."""
        with self._lock:
            return list(self._records)

    def chat_requests(self) -> list[dict]:
        """Bodies of chat-completion requests only."""
        with self._lock:
            return [r.body for r in self._records if _is_chat_path(r.path)]

    def images(self, i: int = -1) -> list[str]:
        """The image URLs the `i`-th chat request sent, in message order (vision tests)."""
        body = self.chat_requests()[i]
        return [
            part["image_url"]["url"]
            for message in body.get("messages") or []
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[dict]:
        """Block until at least `n` requests have arrived; raise AssertionError on timeout."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._records) >= n, timeout=timeout):
                raise AssertionError(
                    f"fake model: expected {n} requests within {timeout}s, got {len(self._records)}"
                )
            return [r.body for r in self._records]

    def assert_complete(self) -> None:
        """Fail if scripted responses were left over or a request found the script exhausted."""
        with self._lock:
            problems = list(self._problems)
            if self._script:
                left = ", ".join(_describe(e.response) for e in self._script)
                problems.append(f"{len(self._script)} scripted response(s) never requested: {left}")
        if problems:
            raise AssertionError("fake model script not complete:\n  " + "\n  ".join(problems))

    # ---------------------------------------------------------------- used by the handler

    def _record(self, record: RecordedRequest) -> None:
        with self._changed:
            self._records.append(record)
            self._changed.notify_all()

    def _next_response(self, body: dict) -> Response | None:
        with self._lock:
            for i, entry in enumerate(self._script):
                if entry.when is None or self._matches(entry.when, body):
                    del self._script[i]
                    return entry.response
            default = self.default
        if default is None:
            with self._lock:
                self._problems.append(f"script exhausted; unexpected request: {_summarise(body)}")
            return None
        return default(body) if callable(default) else default

    def _matches(self, when: Predicate, body: dict) -> bool:
        try:
            return bool(when(body))
        except Exception as exc:  # a broken predicate is a test bug: report it, keep serving
            self._problems.append(f"`when` predicate raised {exc!r}")
            return False

    def _next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def _next_call_id(self) -> str:
        with self._lock:
            return f"call_{next(self._call_ids)}"


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer that skips reverse DNS and can drop keep-alive connections on stop."""

    daemon_threads = True
    fake: FakeModel

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a DNS lookup that can take seconds.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Registered on the accept thread, so stop() cannot miss a just-accepted connection.
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeouts, stop()) are expected; anything else is a bug in the fake.
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError | _Aborted):
            return
        with self.fake._lock:
            self.fake._problems.append(f"fake model handler crashed: {exc!r}")
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDK reuses connections
    disable_nagle_algorithm = True  # small SSE writes must not wait for ACKs
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    # ---------------------------------------------------------------- routing

    def do_GET(self) -> None:
        record = self._record({})
        if not self._authorised(record):
            return
        path = _strip_v1(record.path)
        fake = self.server.fake
        if path == "/models":
            self._send_json(200, {"object": "list", "data": [self._model_entry()]})
        elif path == f"/models/{fake.model_name}":
            self._send_json(200, self._model_entry())
        else:
            self._send_error(404, f"fake model: no route for GET {record.path}", "not_found")

    def do_POST(self) -> None:
        if _strip_v1(self.path.split("?", 1)[0]) == "/audio/transcriptions":
            self._answer_transcription()
            return
        if _strip_v1(self.path.split("?", 1)[0]) == "/audio/speech":
            self._answer_speech()
            return
        try:
            raw = self._read_body()
            body = json.loads(raw) if raw else {}
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            self._record({})
            self._send_error(400, f"fake model: invalid JSON body ({exc})", "invalid_json")
            return
        record = self._record(body)
        if not self._authorised(record):
            return
        if _strip_v1(record.path) == "/embeddings":
            self._answer_embeddings(body)
            return
        if not _is_chat_path(record.path):
            self._send_error(404, f"fake model: no route for POST {record.path}", "not_found")
            return
        problem = _bad_image_part(body)
        if problem is not None:
            self._send_error(400, f"fake model: {problem}", "invalid_image_url")
            return
        response = self.server.fake._next_response(body)
        try:
            self._answer(response, body)
        except _Aborted:
            self.close_connection = True

    # ---------------------------------------------------------------- answering

    def _answer(self, response: Response | None, body: dict) -> None:
        fake = self.server.fake
        if response is None:
            # x-should-retry stops the SDK from hammering an exhausted script 4 times.
            self._send_error(
                500, "fake model: script exhausted", "script_exhausted", {"x-should-retry": "false"}
            )
        elif isinstance(response, Drop):
            raise _Aborted
        elif isinstance(response, Hang):
            if fake._stopping.wait(response.seconds):
                raise _Aborted
            self._answer(response.then or Text(""), body)
        elif isinstance(response, Text):
            self._answer_text(response, body)
        elif isinstance(response, ToolCalls):
            self._answer_tool_calls(response, body)
        elif isinstance(response, Error):
            extra = {}
            if response.retry_after_ms is not None:
                extra["retry-after-ms"] = str(response.retry_after_ms)
            self._send_error(response.status, response.message, response.code, extra)
        elif isinstance(response, ContextLengthError):
            used = max(_estimate_prompt_tokens(body), response.limit + 1)
            message = (
                f"This model's maximum context length is {response.limit} tokens. "
                f"However, your messages resulted in {used} tokens. "
                "Please reduce the length of the messages."
            )
            self._send_error(400, message, "context_length_exceeded", param="messages")
        elif isinstance(response, Raw):
            self._send(
                response.status, response.body.encode(), response.content_type, response.headers
            )
        else:
            raise TypeError(f"fake model: unsupported scripted response {response!r}")

    def _answer_transcription(self) -> None:
        """`/v1/audio/transcriptions` (multipart: `file`, `model`): the next scripted transcript."""
        raw = self._read_body()
        self._record({})
        if not self._authorised(self.server.fake._records[-1]):
            return
        head = f"Content-Type: {self.headers.get('Content-Type', '')}\r\n\r\n".encode()
        form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        fields = (
            {
                part.get_param("name", header="content-disposition"): part
                for part in form.iter_parts()
            }
            if form.is_multipart()
            else {}
        )
        upload, model = fields.get("file"), fields.get("model")
        if upload is None or model is None:
            self._send_error(400, "fake model: file and model are required", "invalid_request")
            return
        data = upload.get_payload(decode=True) or b""
        name = model.get_payload(decode=True)
        fake = self.server.fake
        with fake._lock:
            fake.audio.append(
                {
                    "model": name.decode() if isinstance(name, bytes) else str(name),
                    "filename": upload.get_filename(),
                    "content_type": upload.get_content_type(),
                    "bytes": len(data),
                }
            )
            text = fake.transcripts.pop(0) if fake.transcripts else "fake transcript"
        self._send_json(200, {"text": text})

    def _answer_speech(self) -> None:
        """`/v1/audio/speech` (JSON: model, input, voice): a short generated WAV, longer for
        longer input, or `fake.speech_status` when a test makes it fail."""
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        record = self._record(body if isinstance(body, dict) else {})
        if not self._authorised(record):
            return
        fake = self.server.fake
        with fake._lock:
            fake.speech.append(dict(body) if isinstance(body, dict) else {})
            status = fake.speech_status
        text = body.get("input") if isinstance(body, dict) else None
        if status != 200:
            self._send_error(status, "fake model: speech is failing", "speech_failed")
        elif not isinstance(text, str) or not text or not isinstance(body.get("voice"), str):
            self._send_error(400, "fake model: input and voice are required", "invalid_request")
        else:
            self._send(200, _wav(0.05 + min(len(text), 400) / 4000), "audio/wav")

    def _answer_embeddings(self, body: dict) -> None:
        """Vectors for `input` (a string or a list of them): hashed words, not meaning; texts
        sharing words are near, which is all a test of the wiring needs."""
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self._send_error(
                400, "fake model: input must be a string or a list of strings", "invalid_input"
            )
            return
        data = [
            {"object": "embedding", "index": i, "embedding": _hashed_words(text)}
            for i, text in enumerate(texts)
        ]
        self._send_json(
            200,
            {"object": "list", "data": data, "model": body.get("model"), "usage": _usage(0, 0)},
        )

    def _answer_text(self, r: Text, body: dict) -> None:
        usage = _usage(
            r.prompt_tokens if r.prompt_tokens is not None else _estimate_prompt_tokens(body),
            r.completion_tokens if r.completion_tokens is not None else len(r.text) // 4 + 1,
        )
        if body.get("stream"):
            pieces = [{"content": p} for p in _pieces(r.text, r.chunk_chars)]
            self._stream(body, pieces, r.finish_reason, usage, r.delay)
        else:
            message = {"role": "assistant", "content": r.text, "refusal": None}
            self._send_json(200, self._completion(body, message, r.finish_reason, usage))

    def _answer_tool_calls(self, r: ToolCalls, body: dict) -> None:
        fake = self.server.fake
        calls = [
            (fake._next_call_id(), name, args if isinstance(args, str) else json.dumps(args))
            for name, args in r.calls
        ]
        usage = _usage(
            r.prompt_tokens if r.prompt_tokens is not None else _estimate_prompt_tokens(body),
            r.completion_tokens
            if r.completion_tokens is not None
            else (len(r.content or "") + sum(len(a) for _, _, a in calls)) // 4 + 1,
        )
        if body.get("stream"):
            deltas: list[dict] = [{"content": p} for p in _pieces(r.content or "", r.chunk_chars)]
            for index, (call_id, name, args) in enumerate(calls):
                head = {"index": index, "id": call_id, "type": "function"}
                head["function"] = {"name": name, "arguments": ""}
                deltas.append({"tool_calls": [head]})
                deltas.extend(
                    {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                    for piece in _pieces(args, r.chunk_chars)
                )
            self._stream(body, deltas, "tool_calls", usage, 0.0)
        else:
            message = {
                "role": "assistant",
                "content": r.content,
                "refusal": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                    for cid, name, args in calls
                ],
            }
            self._send_json(200, self._completion(body, message, "tool_calls", usage))

    def _completion(self, body: dict, message: dict, finish: str, usage: dict) -> dict:
        return {
            "id": f"chatcmpl-{self.server.fake._next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.server.fake.model_name,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": usage,
        }

    def _stream(
        self, body: dict, deltas: list[dict], finish: str, usage: dict, delay: float
    ) -> None:
        base = {
            "id": f"chatcmpl-{self.server.fake._next_id()}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model") or self.server.fake.model_name,
        }

        def chunk(delta: dict, finish_reason: str | None = None) -> dict:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return {**base, "choices": [choice]}

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk(d) for d in deltas]
        events.append(chunk({}, finish))
        options = body.get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage"):
            events.append({**base, "choices": [], "usage": usage})
        frames = [_http_chunk(f"data: {json.dumps(e)}\n\n".encode()) for e in events]
        frames.append(_http_chunk(b"data: [DONE]\n\n"))
        frames.append(b"0\r\n\r\n")

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if delay <= 0:
            self.wfile.write(b"".join(frames))
            return
        for frame in frames:
            self.wfile.write(frame)
            self.wfile.flush()
            if self.server.fake._stopping.wait(delay):
                raise _Aborted

    # ---------------------------------------------------------------- plumbing

    def _record(self, body: dict) -> RecordedRequest:
        record = RecordedRequest(
            method=self.command,
            # Absolute-form targets ("http://host/v1/...") are what clients send to a proxy.
            path=urlsplit(self.path).path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        self.server.fake._record(record)
        return record

    def _authorised(self, record: RecordedRequest) -> bool:
        expected = self.server.fake.api_key
        if expected is None:
            return True
        given = record.headers.get("authorization", "")
        if given == f"Bearer {expected}":
            return True
        token = given.removeprefix("Bearer ").strip() or "(none)"
        # Echoes the bad key like some real servers do, so tests can check we never repeat it.
        self._send_error(401, f"Incorrect API key provided: {token}.", "invalid_api_key")
        return False

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _model_entry(self) -> dict:
        fake = self.server.fake
        entry: dict[str, Any] = {
            "id": fake.model_name,
            "object": "model",
            "created": 0,
            "owned_by": "fake",
        }
        if fake.context_length is not None:
            entry["context_length"] = fake.context_length
        if fake.vision:
            entry["architecture"] = {"input_modalities": ["text", "image"]}
        return entry

    def _send_error(
        self,
        status: int,
        message: str,
        code: str | None,
        headers: dict[str, str] | None = None,
        param: str | None = None,
    ) -> None:
        error = {"message": message, "type": _error_type(status), "param": param, "code": code}
        self._send_json(status, {"error": error}, headers)

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers)

    def _send(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


# ---------------------------------------------------------------------- helpers


EMBEDDING_DIMENSIONS = 64


def _hashed_words(text: str) -> list[float]:
    """A stable vector per text: each word adds one to a dimension chosen by its hash."""
    import hashlib

    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in text.lower().split():
        digest = hashlib.blake2b(word.strip(".,!?;:").encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "big") % EMBEDDING_DIMENSIONS] += 1.0
    if not any(vector):
        vector[0] = 1.0
    return vector


def _bad_image_part(body: dict) -> str | None:
    """What OpenAI would refuse in the request's image parts (a URL that is no http(s) or
    data:image URL), so a Hermes that sends a malformed part fails the test."""
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else None
            if not isinstance(url, str) or not url.startswith(
                ("http://", "https://", "data:image/")
            ):
                return f"invalid image_url part {str(part)[:80]}"
            if message.get("role") != "user":
                return "image parts are only allowed in user messages"
    return None


def _wav(seconds: float, rate: int = 8000) -> bytes:
    """A mono 8-bit WAV of a quiet square wave, as made-up speech."""
    import io
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(rate)
        out.writeframes(bytes(140 if (i // 20) % 2 else 116 for i in range(int(rate * seconds))))
    return buffer.getvalue()


def _strip_v1(path: str) -> str:
    return path[3:] if path.startswith("/v1/") else path


def _is_chat_path(path: str) -> bool:
    return _strip_v1(path) == "/chat/completions"


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _http_chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _usage(prompt: int, completion: int) -> dict:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _estimate_prompt_tokens(body: dict) -> int:
    """Total characters of all message contents // 4 (text parts of multimodal content count)."""
    total = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(part.get("text") or "") for part in content if isinstance(part, dict))
    return total // 4


def _error_type(status: int) -> str:
    if status in (401, 403):
        return "authentication_error"
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def _describe(response: Response) -> str:
    text = repr(response)
    return text if len(text) <= 80 else text[:77] + "..."


def _summarise(body: dict) -> str:
    messages = body.get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    content = str(last.get("content", ""))[:60]
    return f"{len(messages)} message(s), last {last.get('role', '?')}: {content!r}"


def _echo(body: dict) -> Response:
    """Demo responder: repeats the newest user message, so a quickstart works with no real model."""
    last: dict[str, Any] = next(
        (m for m in reversed(body.get("messages", [])) if m.get("role") == "user"), {}
    )
    content = last.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return Text(f"(echo model) You said: {content}")


def main() -> None:
    """`python -m hermes.testing.fake_model --port 8000`: an echo model for trying Hermes out."""
    import argparse

    parser = argparse.ArgumentParser(description="A local echo model speaking the OpenAI API.")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    with FakeModel(port=args.port, model_name="echo", default=_echo) as fake:
        print(f"echo model on {fake.base_url} (model name: echo); Ctrl-C stops it", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
