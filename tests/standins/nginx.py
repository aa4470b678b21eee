"""nginx as a load balancer in front of `hermes serve` replicas, for tests and benchmarks.

Why the real nginx and not a Python proxy: what a deployment relies on — a dead upstream
answered with 502, a connection refused tried on the next replica, keep-alive to the
replicas, hashing a session's header to one replica — is nginx's behaviour, and a stand-in
would test our idea of it. The process is the caller's own (`daemon off`, `-p` prefix, config,
logs and temporary files in one directory), listening on a port the OS picked; nothing of
the machine's nginx installation (its config, its service) is used.

    with Nginx(tmp_path, upstreams=["127.0.0.1:8001", "127.0.0.1:8002"]) as lb:
        httpx.post(f"{lb.base_url}/v1/chat/completions", ...)
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["Nginx", "config_text", "find_nginx", "free_port"]

SESSION_HEADER = "x_hermes_session_id"  # X-Hermes-Session-Id as nginx names it


def find_nginx() -> str | None:
    """The nginx binary (PATH, then Debian's /usr/sbin), or None when it is not installed."""
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def free_port() -> int:
    """A port the OS says is free now (the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config_text(prefix: Path, listen: int, upstreams: list[str]) -> str:
    """The nginx.conf: sessions hashed to a replica by their header (consistent hashing, so a
    dead replica's sessions move and the others' stay); a replica that refuses connections
    is skipped for a second; a request already sent is never re-sent to another replica
    (POST is not idempotent: the client decides, by its Idempotency-Key)."""
    servers = "\n".join(f"        server {u} max_fails=1 fail_timeout=1s;" for u in upstreams)
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / 'temp' / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers then write the temp dirs
    return f"""{user}worker_processes 1;
error_log {prefix / "error.log"} warn;
pid {prefix / "nginx.pid"};
events {{ worker_connections 1024; }}
http {{
    access_log off;
{temp}
    upstream hermes {{
        hash $http_{SESSION_HEADER} consistent;
{servers}
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{listen};
        client_max_body_size 64m;
        location / {{
            proxy_pass http://hermes;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_buffering off;
            proxy_read_timeout 300s;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 3;
        }}
    }}
}}
"""


class Nginx:
    """One nginx process balancing over `upstreams` ("host:port"); a context manager."""

    def __init__(self, prefix: Path, upstreams: list[str], binary: str | None = None) -> None:
        found = binary or find_nginx()
        if found is None:
            raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
        self.binary = found
        self.prefix = prefix
        self.upstreams = upstreams
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> Nginx:
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.prefix / "temp" / kind).mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        conf = self.prefix / "nginx.conf"
        conf.write_text(config_text(self.prefix, self.port, self.upstreams))
        self._proc = subprocess.Popen(
            [self.binary, "-p", str(self.prefix), "-c", str(conf), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise RuntimeError(f"nginx exited with {self._proc.returncode}: {err.strip()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nginx did not listen on {self.port} within {timeout} s")

    def error_log(self) -> str:
        path = self.prefix / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)  # graceful: finish what is in flight
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr:
            proc.stderr.close()

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
