"""A real Matrix homeserver for the tests and `bench/gateway.py`: Synapse (the
`matrix-synapse` package of the test extra) on a free loopback port with SQLite, in a
temporary directory, started once per test session. Users are registered through the admin shared-secret API; `Person` talks to the
bot over the plain client-server API (httpx), as any Matrix client would."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from hermes import tls

SECRET = "hermes-test-shared-secret"
SERVER = "localhost"
_txn = itertools.count(1)

CONFIG = """\
server_name: {server}
pid_file: {dir}/homeserver.pid
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {dir}/homeserver.db
log_config: {dir}/log.yaml
media_store_path: {dir}/media
signing_key_path: {dir}/signing.key
registration_shared_secret: {secret}
report_stats: false
trusted_key_servers: []
suppress_key_server_warning: true
enable_registration: false
presence:
  enabled: false
url_preview_enabled: false
rc_message: {{per_second: 1000, burst_count: 1000}}
rc_login:
  address: {{per_second: 1000, burst_count: 1000}}
  account: {{per_second: 1000, burst_count: 1000}}
  failed_attempts: {{per_second: 1000, burst_count: 1000}}
rc_joins:
  local: {{per_second: 1000, burst_count: 1000}}
  remote: {{per_second: 1000, burst_count: 1000}}
rc_invites:
  per_room: {{per_second: 1000, burst_count: 1000}}
  per_user: {{per_second: 1000, burst_count: 1000}}
  per_issuer: {{per_second: 1000, burst_count: 1000}}
rc_registration: {{per_second: 1000, burst_count: 1000}}
"""

LOG = """\
version: 1
formatters:
  precise: {format: '%(asctime)s %(name)s %(levelname)s %(message)s'}
handlers:
  file: {class: logging.FileHandler, formatter: precise, filename: DIR/homeserver.log}
root: {level: WARNING, handlers: [file]}
disable_existing_loggers: false
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Synapse:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, within: float = 90.0) -> Synapse:
        self.dir.mkdir(parents=True, exist_ok=True)
        config = self.dir / "homeserver.yaml"
        config.write_text(
            CONFIG.format(server=SERVER, dir=self.dir, port=self.port, secret=SECRET),
            encoding="utf-8",
        )
        (self.dir / "log.yaml").write_text(LOG.replace("DIR", str(self.dir)), encoding="utf-8")
        cmd = [sys.executable, "-m", "synapse.app.homeserver", "-c", str(config)]
        env = dict(os.environ)
        subprocess.run([*cmd, "--generate-keys"], check=True, capture_output=True, env=env)
        with (self.dir / "stdout.log").open("wb") as out:  # the child keeps its own copy
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = (self.dir / "stdout.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"Synapse exited at start ({self.proc.returncode}):\n{log}")
            try:
                if httpx.get(f"{self.url}/_matrix/client/versions", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"Synapse did not answer within {within:.0f} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def register(self, name: str, password: str) -> str:
        """A new user through `/_synapse/admin/v1/register` (HMAC-SHA1 of the shared secret)."""
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        nonce = httpx.get(endpoint, timeout=10).json()["nonce"]
        mac = hmac.new(SECRET.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join([nonce.encode(), name.encode(), password.encode(), b"notadmin"]))
        body = {
            "nonce": nonce,
            "username": name,
            "password": password,
            "admin": False,
            "mac": mac.hexdigest(),
        }
        r = httpx.post(endpoint, json=body, timeout=30)
        r.raise_for_status()
        return str(r.json()["user_id"])


class Person:
    """A Matrix user driven over the client-server API."""

    def __init__(self, server: Synapse, name: str, password: str = "pw-" + "x" * 12) -> None:
        self.server = server
        self.user_id = server.register(name, password)
        r = httpx.post(
            f"{server.url}/_matrix/client/v3/login",
            json={
                "type": "m.login.password",
                "identifier": {"type": "m.id.user", "user": name},
                "password": password,
            },
            timeout=30,
        )
        r.raise_for_status()
        self.token = r.json()["access_token"]
        self.http = httpx.AsyncClient(
            verify=tls.httpx_context(),
            base_url=f"{server.url}/_matrix/client/v3",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        r = await self.http.request(method, path, json=body)
        assert r.status_code == 200, f"{method} {path}: {r.status_code} {r.text}"
        return r.json()

    async def create_room(self, invite: list[str], encrypted: bool = False) -> str:
        body: dict[str, Any] = {"preset": "private_chat", "invite": invite}
        if encrypted:
            body["initial_state"] = [
                {
                    "type": "m.room.encryption",
                    "state_key": "",
                    "content": {"algorithm": "m.megolm.v1.aes-sha2"},
                }
            ]
        return str((await self.call("POST", "/createRoom", body))["room_id"])

    async def say(self, room: str, text: str, **relates: Any) -> str:
        content: dict[str, Any] = {"msgtype": "m.text", "body": text}
        if relates:
            content["m.relates_to"] = relates
        path = f"/rooms/{room}/send/m.room.message/t{next(_txn)}-{time.time_ns()}"
        return str((await self.call("PUT", path, content))["event_id"])

    async def upload(self, data: bytes, mime: str, name: str) -> str:
        """Put a file in the homeserver's media repository; its `mxc://` URI."""
        r = await self.http.post(
            f"{self.server.url}/_matrix/media/v3/upload",
            params={"filename": name},
            content=data,
            headers={"Content-Type": mime},
        )
        assert r.status_code == 200, r.text
        return str(r.json()["content_uri"])

    async def send_media(
        self, room: str, msgtype: str, data: bytes, mime: str, name: str, caption: str = ""
    ) -> str:
        """An m.image / m.audio message (caption in `body`, the file name in `filename`)."""
        uri = await self.upload(data, mime, name)
        content = {
            "msgtype": msgtype,
            "body": caption or name,
            "filename": name,
            "url": uri,
            "info": {"mimetype": mime, "size": len(data)},
        }
        return await self.send_raw(room, "m.room.message", content)

    async def send_raw(self, room: str, kind: str, content: dict[str, Any]) -> str:
        path = f"/rooms/{room}/send/{kind}/t{next(_txn)}-{time.time_ns()}"
        return str((await self.call("PUT", path, content))["event_id"])

    async def messages(self, room: str, sender: str) -> list[dict[str, Any]]:
        data = await self.call("GET", f"/rooms/{room}/messages?dir=b&limit=100")
        found = [
            e for e in data["chunk"] if e["sender"] == sender and e["type"] == "m.room.message"
        ]
        return list(reversed(found))

    async def next_batch(self) -> str:
        return str((await self.call("GET", "/sync?timeout=0"))["next_batch"])

    async def wait_from(self, since: str, room: str, sender: str) -> tuple[str, float]:
        """Long-poll `/sync` until `sender` posts in `room`: (next batch, arrival time)."""
        while True:
            data = await self.call("GET", f"/sync?timeout=30000&since={since}")
            since = data["next_batch"]
            events = data.get("rooms", {}).get("join", {}).get(room, {}).get("timeline", {})
            if any(e.get("sender") == sender for e in events.get("events", [])):
                return since, time.perf_counter()

    async def members(self, room: str) -> dict[str, str]:
        data = await self.call("GET", f"/rooms/{room}/members")
        return {e["state_key"]: e["content"]["membership"] for e in data["chunk"]}
