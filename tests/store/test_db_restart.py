"""The database restarted under load, on a private PostgreSQL instance (initdb in a temp dir on
a free port, so the machine's shared server is never disturbed): requests during the outage
get 503 `database_unavailable` (never a 500), the replica recovers by itself, and every
acknowledged turn is stored whole."""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hermes import tls
from hermes.store import open_store
from hermes.testing.fake_model import FakeModel, Text
from tests.server.test_serve import hermes_serve


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"{name} not found under /usr/lib/postgresql (apt install postgresql)")
    return found[-1]


def _as_postgres(*cmd: str) -> list[str]:
    """initdb and pg_ctl refuse to run as root: run them as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else list(cmd)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def private_pg() -> Iterator[tuple[str, list[str]]]:
    """(URL, the pg_ctl command with its start options) of a throwaway server; removed
    afterwards."""
    root = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    data, port = root / "data", _free_port()
    subprocess.run(
        _as_postgres(
            _bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"
        ),
        check=True,
        capture_output=True,
    )
    ctl = _as_postgres(_bin("pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w")
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    ctl += ["-o", options]
    subprocess.run([*ctl, "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres", ctl
    finally:
        subprocess.run([*ctl, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _pg_ctl(ctl: list[str], *args: str) -> None:
    subprocess.run([*ctl, *args], check=True, capture_output=True)


async def test_a_database_restart_under_load_gives_503_then_recovers(
    private_pg: tuple[str, list[str]], fake: FakeModel, tmp_path: Path
) -> None:
    url, ctl = private_pg
    fake.default = Text("fine", delay=0.0)
    home = tmp_path / "replica"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  review_interval: 0\ncron:\n  enabled: false\n")
    env = {
        "HERMES_HOME": str(home),
        "HERMES_DATABASE_URL": url,
        "OPENAI_BASE_URL": fake.base_url,
        "HERMES_MODEL": "fake-model",
    }
    statuses: list[tuple[int, str]] = []
    with hermes_serve(env=env) as (_, base):
        async with httpx.AsyncClient(
            verify=tls.httpx_context(), base_url=base, timeout=30
        ) as client:

            async def load(worker: int, turns: int) -> None:
                for _ in range(turns):
                    r = await client.post(
                        "/v1/chat/completions",
                        json={"model": "hermes", "messages": [{"role": "user", "content": "hi"}]},
                        headers={"X-Hermes-Session-Id": f"w{worker}"},
                    )
                    code = r.json().get("error", {}).get("code") if r.status_code != 200 else ""
                    statuses.append((r.status_code, code or ""))

            busy = asyncio.gather(*(load(w, 15) for w in range(3)))
            await asyncio.sleep(0.3)  # let the load start, then pull the database away
            await asyncio.to_thread(_pg_ctl, ctl, "-m", "fast", "restart")
            await busy
            await asyncio.to_thread(_pg_ctl, ctl, "-m", "fast", "stop")  # a longer outage
            down = await client.post(
                "/v1/chat/completions",
                json={"model": "hermes", "messages": [{"role": "user", "content": "down?"}]},
                headers={"X-Hermes-Session-Id": "down"},
            )
            sick = await client.get("/health/detailed")
            await asyncio.to_thread(_pg_ctl, ctl, "start")
            for _ in range(200):  # recovers by itself: poll with a deadline
                r = await client.post(
                    "/v1/chat/completions",
                    json={"model": "hermes", "messages": [{"role": "user", "content": "back?"}]},
                    headers={"X-Hermes-Session-Id": "after"},
                )
                if r.status_code == 200:
                    break
                await asyncio.sleep(0.05)
            assert r.status_code == 200, r.text
            health = (await client.get("/health/detailed")).json()
    assert down.status_code == 503 and down.headers["retry-after"] == "5"
    assert down.json()["error"]["code"] == "database_unavailable"
    assert "postgres@" not in down.text  # the address stays in the server log
    assert sick.status_code == 503 and sick.json()["parts"]["database"]["status"] == "error"
    assert health["parts"]["database"]["status"] == "ok", health
    assert health["parts"]["database"]["pool"]["max"] == 10
    assert {s for s, _ in statuses} <= {200, 503}, statuses  # never a 500
    assert all(code == "database_unavailable" for s, code in statuses if s == 503)
    store = open_store(url)
    try:
        # a worker whose every turn met the outage has no session: nothing acknowledged
        sessions = [store.get_session("default", f"w{w}") for w in range(3)]
        stored = sum(s.message_count for s in sessions if s is not None)
    finally:
        store.close()
    assert stored >= 2 * sum(1 for s, _ in statuses if s == 200)  # acknowledged turns kept
    assert stored % 2 == 0  # whole turns only
