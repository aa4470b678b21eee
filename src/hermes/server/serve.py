"""Run the app on uvicorn in this process: bind checks, one asyncio loop, graceful shutdown.

On SIGTERM/SIGINT uvicorn stops accepting connections, waits for in-flight requests (so a
running turn finishes and is stored), then runs the lifespan shutdown: services stop in
reverse order and the runtime (agent background work, model client, store) closes last.
A second SIGINT forces an immediate exit.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import uvicorn

from hermes.allocator import keep_freed_memory
from hermes.collector import paused_until_ready
from hermes.config.settings import Settings
from hermes.errors import HermesError
from hermes.models.errors import SETUP_HINT
from hermes.store.base import StoreError

if TYPE_CHECKING:
    from hermes.server.profiles import ProfileRouter

log = logging.getLogger("hermes.server")

MIN_PUBLIC_KEY_CHARS = 16


class ServeError(HermesError):
    """The server cannot start; the message is one line saying why and what to do."""


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a hostname we cannot vouch for counts as public


def check_bind(settings: Settings, host: str) -> str | None:
    """Refuse a public bind without a strong server key; returns a warning for open loopback."""
    secret = settings.server.api_key
    key = secret.get_secret_value() if secret is not None else ""
    if is_loopback(host):
        if not key:
            return (
                "no server key is set: every local client is accepted "
                "(set HERMES_API_KEY to require one)"
            )
        return None
    if not key and settings.server.allow_unauthenticated_public_bind:
        return (
            f"!!! open to the network on {host} with NO server key, because "
            "HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND (server.allow_unauthenticated_public_bind) "
            "is set: anyone who reaches this port can talk to the agent, read its memory and "
            "use its tools. That is safe only while the port is published on loopback alone "
            "(docker run -p 127.0.0.1:11434:11434 ...); set HERMES_API_KEY before exposing it "
            "further !!!"
        )
    if len(key) < MIN_PUBLIC_KEY_CHARS:
        what = (
            "no server key is set" if not key else f"the server key has only {len(key)} characters"
        )
        raise ServeError(
            f"refusing to listen on {host}, which is reachable from other machines, because "
            f"{what}; set HERMES_API_KEY (server.api_key) to at least {MIN_PUBLIC_KEY_CHARS} "
            "random characters (e.g. `openssl rand -hex 32`) or bind to 127.0.0.1"
            + (
                ""
                if key
                else " (in a container whose port is published on loopback only, "
                "HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND=1 accepts the risk)"
            )
            + "."
        )
    return None


_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def _is_this_machine(host: str) -> bool:
    """Loopback or "any interface": both name this machine when a client connects to them."""
    return is_loopback(host) or host.strip("[]") in _WILDCARDS


def model_points_here(base_url: str, host: str, port: int) -> bool:
    """Whether `base_url` would reach the server about to listen on host:port (Hermes calling
    itself: each turn would wait on a turn of its own until the model call times out)."""
    try:
        url = urlsplit(base_url)
        url_port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        return False
    url_host = (url.hostname or "").lower()
    if not url_host or url_port != port:
        return False
    bind_host = host.strip("[]").lower()
    if url_host == bind_host:
        return True
    if bind_host in _WILDCARDS:
        return _is_this_machine(url_host) or url_host in _local_names()
    return is_loopback(bind_host) and _is_this_machine(url_host)


def _local_names() -> set[str]:
    name = socket.gethostname().lower()
    return {name, socket.getfqdn().lower()}


def check_model(settings: Settings, host: str, port: int) -> str | None:
    """Refuse a model endpoint that is this very server; returns a line when no model is set."""
    model = settings.model
    if not (model.base_url and model.name):
        return f"no model is set, so chats get a 503 until one is: {SETUP_HINT}"
    if port and model_points_here(model.base_url, host, port):
        raise ServeError(
            f"model.base_url (OPENAI_BASE_URL) is {model.base_url}, which is this Hermes "
            f"server itself ({host}:{port}): every turn would call Hermes again instead of "
            "a model. Point it at your model endpoint (Ollama, vLLM, OpenAI, ...) or serve "
            "Hermes on another port with --port."
        )
    return None


def check_bots(settings: Settings, *, only: str | None = None) -> None:
    """Refuse to run a bot that another profile runs too (both would answer its chats)."""
    from hermes.config.home import DEFAULT_PROFILE, root_home
    from hermes.profiles import bot_conflicts

    root = settings.home if settings.profile == DEFAULT_PROFILE else root_home()
    serving_all = settings.profile == DEFAULT_PROFILE and only is None
    problems = bot_conflicts(root, None if serving_all else only or settings.profile, own=settings)
    if problems:
        raise ServeError("; ".join(problems) + ".")


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before loading anything heavy, so a busy port is one clear line, not a traceback."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        hint = "; is another server running? Choose another with --port" if exc.errno == 98 else ""
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@contextmanager
def _quiet_signal_reraise() -> Iterator[None]:
    """uvicorn re-raises the signal that stopped it once its graceful shutdown is done, which
    would turn a clean exit into a KeyboardInterrupt or a kill; no-op handlers absorb it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Server(uvicorn.Server):
    """uvicorn's server, telling Hermes the moment a stop signal arrives: requests still
    waiting for a busy session then give up (503) instead of holding the shutdown up.
    `stop_when`, once set, stops it as SIGTERM does (checked on uvicorn's tick): a server in
    a thread of another program gets no signals."""

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        on_exit: Callable[[], None],
        stop_when: threading.Event | None = None,
    ) -> None:
        super().__init__(config)
        self._on_exit = on_exit
        self._stop_when = stop_when

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if self._stop_when is not None and self._stop_when.is_set() and not self.should_exit:
            self.handle_exit(signal.SIGTERM, None)
        return await super().on_tick(counter)


def _uvicorn_config(app: object) -> uvicorn.Config:
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        lifespan="on",
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=None,  # in-flight turns finish and are stored
        server_header=False,
        proxy_headers=False,  # Hermes does not use the client address; do not trust X-Forwarded-*
    )


async def serve(
    settings: Settings,
    host: str,
    port: int,
    *,
    announce: Callable[[str], None] = lambda line: None,
    stop_when: threading.Event | None = None,
    on_ready: Callable[[], None] = lambda: None,
) -> None:
    """Serve until a signal (or until `stop_when` is set); raises ServeError for bind problems
    before anything is opened. `on_ready` is called once the app has started."""
    warning = check_bind(settings, host)
    no_model = check_model(settings, host, port)
    check_bots(settings)
    sock = bind_socket(host, port)
    # Heavy imports after the bind checks: a refused start stays fast.
    from hermes.server.lazy_openapi import import_fastapi

    import_fastapi()  # first, so that its OpenAPI models are built for /openapi.json only
    from hermes.observability.log_tail import LogTail, attached
    from hermes.plugins import Daemon
    from hermes.redact import Redactor, settings_secrets
    from hermes.runtime import build_runtime
    from hermes.server.app import create_app

    if warning:
        announce(f"warning: {warning}")
    if no_model:
        announce(f"warning: {no_model}")
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}"

    async def ready() -> None:
        on_ready()
        announce(f"Hermes is listening on {url} (Ctrl-C to stop)")
        if profiles is not None and (named := profiles.served()):
            announce(f"profiles: {', '.join(named)} (at {url}/p/<name>/v1, each with its own key)")

    try:
        runtime = build_runtime(settings)
    except StoreError as exc:
        sock.close()
        raise ServeError(str(exc)) from None
    profiles = _profile_router(settings, host, announce)
    app = create_app(
        runtime,
        daemons=[*([profiles.daemon()] if profiles else []), Daemon("ready", ready)],
        routers=[profiles.api_router()] if profiles else [],
    )
    app.state.log_tail = LogTail(Redactor(settings_secrets(settings)))  # GET /api/logs
    served: object = app
    if profiles is not None:
        profiles.default_app = app
        served = profiles
    server = _Server(
        _uvicorn_config(served), on_exit=runtime.agent.locks.close, stop_when=stop_when
    )
    try:
        with _quiet_signal_reraise(), attached(app.state.log_tail):
            await server.serve(sockets=[sock])
    finally:
        sock.close()
    if not server.started:
        raise ServeError("the server did not start; the log above says why")


def _profile_router(
    settings: Settings, host: str, announce: Callable[[str], None]
) -> ProfileRouter | None:
    """The default profile's server also serves every other profile under /p/<name>/
    (`hermes -p NAME serve` serves that profile alone)."""
    from hermes.config.home import DEFAULT_PROFILE
    from hermes.runtime import build_runtime
    from hermes.server.app import create_app
    from hermes.server.profiles import ProfileRouter

    if settings.profile != DEFAULT_PROFILE:
        return None

    def build(profile: Settings) -> object:
        return create_app(build_runtime(profile), configure_logs=False)

    def guard(profile: Settings) -> None:
        check_bots(settings, only=profile.profile)
        warning = check_bind(profile, host)  # ServeError: no strong key on a public bind
        if warning:
            announce(f"warning: profile {profile.profile}: {warning}")

    return ProfileRouter(settings.home, None, settings, build, guard=guard)


def run(
    settings: Settings,
    host: str,
    port: int,
    *,
    announce: Callable[[str], None] = lambda line: None,
    stop_when: threading.Event | None = None,
) -> None:
    """Blocking entry point: serve on uvloop when it is installed (faster), else asyncio.
    In the main thread signals stop it; in another thread, `stop_when`. The garbage collector
    is paused while the server starts (`hermes.collector`), and freed memory is kept for
    reuse (`hermes.allocator`)."""
    keep_freed_memory()
    with paused_until_ready() as ready:
        try:
            import uvloop
        except ImportError:
            runner = asyncio.Runner()
        else:
            runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
        with runner:
            runner.run(
                serve(settings, host, port, announce=announce, stop_when=stop_when, on_ready=ready)
            )
