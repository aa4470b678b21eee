"""Finding the user's model: local servers on their default ports, and checks of an endpoint.

`hermes setup` asks these; they only read (model lists, /health), never load a model.
`HERMES_SETUP_PORTS` (e.g. `ollama=11434,lmstudio=1234`) moves where each server is looked
for, so tests (and unusual installs) can point the probe at their own ports.
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass, field
from typing import Any

import httpx

from hermes import tls
from hermes.errors import HermesError

PROBE_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class ServerKind:
    key: str
    label: str
    port: int
    models_path: str
    """Where its model list is: Ollama's own `/api/tags` tells it apart from other servers."""


KINDS = (
    ServerKind("ollama", "Ollama", 11434, "/api/tags"),
    ServerKind("lmstudio", "LM Studio", 1234, "/v1/models"),
    ServerKind("llamacpp", "llama.cpp server", 8080, "/v1/models"),
    ServerKind("vllm", "vLLM", 8000, "/v1/models"),
)
REMOTES = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
}


@dataclass
class Found:
    kind: ServerKind
    port: int
    models: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


class ProbeConfigError(HermesError, ValueError):
    """HERMES_SETUP_PORTS is malformed."""


def probe_ports(spec: str | None = None) -> list[tuple[ServerKind, int]]:
    """Each kind with the port to look at: its default, or the one HERMES_SETUP_PORTS names."""
    spec = os.environ.get("HERMES_SETUP_PORTS", "") if spec is None else spec
    ports = {kind.key: kind.port for kind in KINDS}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        key, _, value = item.partition("=")
        if key.strip() not in ports or not value.strip().isdigit():
            raise ProbeConfigError(
                f"HERMES_SETUP_PORTS item {item!r} is not <server>=<port> with a server among "
                f"{', '.join(ports)}"
            )
        ports[key.strip()] = int(value)
    return [(kind, ports[kind.key]) for kind in KINDS]


def _model_ids(kind: ServerKind, body: Any) -> list[str] | None:
    """Model names from a list answer, or None when it is not that server's answer."""
    if not isinstance(body, dict):
        return None
    if kind.key == "ollama":
        entries, key = body.get("models"), "name"
    else:
        entries, key = body.get("data"), "id"
    if not isinstance(entries, list):
        return None
    return [str(e[key]) for e in entries if isinstance(e, dict) and e.get(key)]


async def _probe_one(client: httpx.AsyncClient, kind: ServerKind, port: int) -> Found | None:
    try:
        response = await client.get(f"http://127.0.0.1:{port}{kind.models_path}")
        ids = _model_ids(kind, response.json()) if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return None if ids is None else Found(kind, port, ids)


async def find_local_servers(spec: str | None = None) -> list[Found]:
    """Every known local server that answers on its port, with the models it offers."""
    targets = probe_ports(spec)
    async with httpx.AsyncClient(
        verify=tls.httpx_context(), timeout=PROBE_TIMEOUT_S, trust_env=False
    ) as client:
        found = await asyncio.gather(*(_probe_one(client, kind, port) for kind, port in targets))
    return [f for f in found if f is not None]


async def is_hermes(host: str, port: int) -> bool:
    """A Hermes server answers /health with its store and model status."""
    try:
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), timeout=PROBE_TIMEOUT_S, trust_env=False
        ) as client:
            body = (await client.get(f"http://{_connect_host(host)}:{port}/health")).json()
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(body, dict) and "model_configured" in body


def _connect_host(host: str) -> str:
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((_connect_host(host), port)) == 0


def free_port(host: str, start: int, tries: int = 50) -> int:
    """The first port from `start` that nothing listens on and we may bind."""
    for port in range(start, min(start + tries, 65536)):
        if port_in_use(host, port):
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((_connect_host(host), port))
            except OSError:
                continue
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # let the system choose
        s.bind((_connect_host(host), 0))
        return int(s.getsockname()[1])
