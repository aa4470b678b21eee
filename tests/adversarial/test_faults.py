"""Machine faults: a full disk is a 507 naming the path, a damaged database a 503, unreadable
notes leave the turn going, a corrupt jobs file fails `cron tick`, a stalled body gets 408."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.config.settings import Settings, load_settings
from hermes.memory.health import notes_health
from hermes.memory.notes import NotesError, NotesStore
from hermes.server import faults
from hermes.testing.fake_model import FakeModel, Text
from tests.conftest import run_cli
from tests.server.conftest import AUTH, open_api, open_socket_api, sse_events

# ---------------------------------------------------------------------- disk full


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (root can mount one; CI runs as root), unmounted afterwards."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Write a filler file until the disk refuses; returns it (delete it to free the space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


async def test_full_disk_is_a_507_naming_the_path_and_health_says_so(
    small_disk: Path, fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = small_disk / "home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("HERMES_MODEL", "m")
    monkeypatch.setenv("HERMES_API_KEY", AUTH["Authorization"].split()[1])
    settings = load_settings()
    settings.model.max_retries = 0
    fake.enqueue(Text("before"))
    fake.default = Text("fine")
    async with open_api(settings) as api:
        api.client.headers.update(AUTH)
        ok = await api.chat("hi", headers={"X-Hermes-Session-Id": "s"})
        assert ok.status_code == 200, ok.text
        filler = _fill(small_disk)
        full = await api.chat("again " * 20_000, headers={"X-Hermes-Session-Id": "s"})
        assert full.status_code == 507, full.text
        assert str(home) in full.json()["error"]["message"]
        job = await api.client.post(
            "/api/jobs", json={"name": "n", "schedule": "every 1h", "prompt": "p " * 2000}
        )
        assert job.status_code == 507, job.text
        health = (await api.client.get("/health/detailed")).json()
        assert health["status"] == "degraded" and "disk" in health["degraded"]
        assert "full" in health["reasons"]["disk"]
        filler.unlink()
        faults.clear_disk_full()
        after = await api.chat("and now", headers={"X-Hermes-Session-Id": "s"})
        assert after.status_code == 200, after.text
        stored = [m.content for m in api.runtime.store.get_messages("default", "s")]
    assert stored == ["hi", "before", "and now", "fine"]  # nothing lost, nothing half-kept


def test_disk_full_errors_are_recognised_through_causes(tmp_path: Path) -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))
        except OSError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as exc:
        err = faults.from_fault(exc, home=tmp_path)
    assert err is not None and err.status == 507 and str(tmp_path / "x") in err.message
    faults.clear_disk_full()


# ---------------------------------------------------------------------- damaged state.db


async def test_damaged_state_db_is_a_503(settings: Settings, fake: FakeModel) -> None:
    fake.enqueue(Text("first"))
    async with open_api(settings) as api:
        assert (await api.chat("hi", headers={"X-Hermes-Session-Id": "s"})).status_code == 200
        await asyncio.to_thread(_wreck, settings.home / "state.db")
        r = await api.chat("again", headers={"X-Hermes-Session-Id": "s"})
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "store_damaged"


def _wreck(db: Path) -> None:
    """Overwrite every page after the header (and the WAL) with noise."""
    with open(db, "r+b") as fh:
        fh.seek(100)
        fh.write(os.urandom(max(db.stat().st_size - 100, 8192)))
    for wal in (db.with_name("state.db-wal"), db.with_name("state.db-shm")):
        if wal.exists():
            with open(wal, "r+b") as fh:
                fh.write(os.urandom(wal.stat().st_size))


# ---------------------------------------------------------------------- unreadable notes


@pytest.mark.parametrize("kind", ["directory", "symlink-loop"])
async def test_unreadable_notes_leave_the_turn_going(
    settings: Settings, fake: FakeModel, kind: str
) -> None:
    memories = settings.home / "memories"
    memories.mkdir(parents=True, exist_ok=True)
    target = memories / "MEMORY.md"
    if kind == "directory":
        target.mkdir()
    else:
        target.symlink_to(memories / "loop")
        (memories / "loop").symlink_to(target)
    (memories / "USER.md").write_text("Name: Alex\n")
    fake.enqueue(Text("still here"))
    async with open_api(settings) as api:
        r = await api.chat("hi")
        assert r.status_code == 200, r.text
        system = fake.chat_requests()[-1]["messages"][0]["content"]
        assert "Name: Alex" in system  # the readable file still made it
        health = (await api.client.get("/health/detailed")).json()
        assert "notes" in health["degraded"] and "MEMORY.md" in health["reasons"]["notes"]
    with pytest.raises(NotesError, match="MEMORY.md cannot be read"):
        NotesStore(settings.home, "default", settings.memory).read("memory")
    target.unlink() if target.is_symlink() else target.rmdir()
    NotesStore(settings.home, "default", settings.memory).read("memory")
    assert (await notes_health(api.runtime))["status"] == "ok"


# ---------------------------------------------------------------------- corrupt jobs.json


def test_cron_tick_on_a_corrupt_jobs_file_fails(home: Path) -> None:
    jobs = home / "cron" / "jobs.json"
    jobs.parent.mkdir(parents=True, exist_ok=True)
    jobs.write_text('{"jobs": [ {"id": "abc", ')
    result = run_cli("cron", "tick")
    assert result.returncode == 1, result.stdout
    assert "no jobs were due" not in result.stdout
    assert "jobs.json" in result.stderr


# ---------------------------------------------------------------------- stalled bodies


async def test_a_stalled_request_body_gets_408(settings: Settings) -> None:
    settings.server.body_timeout = 0.3
    async with open_socket_api(settings) as (base, _runtime):
        host, port = base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"model": "hermes", '
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.read(4096), 5)
        writer.close()
    assert head.startswith(b"HTTP/1.1 408"), head[:200]


async def test_disk_full_during_a_streamed_turn_is_a_507_too(
    small_disk: Path, fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: the streamed path said 500 where the non-streamed one says 507. Before the
    stream starts it is a 507; once it has started, an error event with the same code."""
    home = small_disk / "home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("HERMES_MODEL", "m")
    settings = load_settings()
    settings.model.max_retries = 0
    fake.default = Text("fine")
    async with open_api(settings) as api:
        ok = await api.chat("hi", headers={"X-Hermes-Session-Id": "s"}, stream=True)
        assert ok.status_code == 200, ok.text
        filler = _fill(small_disk)
        try:
            full = await api.chat(
                "again " * 20_000, headers={"X-Hermes-Session-Id": "s"}, stream=True
            )
        finally:
            filler.unlink()
            faults.clear_disk_full()
    if full.status_code == 507:
        assert full.json()["error"]["code"] == "disk_full", full.text
        assert str(home) in full.json()["error"]["message"]
    else:
        assert full.status_code == 200, full.text
        errors = [json.loads(d) for _, d in sse_events(full.text) if '"error"' in d]
        assert errors and errors[-1]["error"]["code"] == "disk_full", full.text
    assert "internal_error" not in full.text


async def test_disk_full_after_the_stream_started_is_an_error_event(tmp_path: Path) -> None:
    """Mid-stream the status is already sent: the failure is the stream's last event."""
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.routing import Route

    from hermes.agent.turn import TurnObserver, TurnResult
    from hermes.server.openai_compat import ChunkWriter
    from hermes.server.streaming import TurnStreamResponse

    async def run(observer: TurnObserver) -> TurnResult:
        observer.on_delta("partial answer")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "state.db"))

    async def endpoint(request: Request) -> TurnStreamResponse:
        return TurnStreamResponse(run, ChunkWriter("chatcmpl-x", "hermes"), {})

    app = Starlette(routes=[Route("/s", endpoint, methods=["POST"])])
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        r = await client.post("/s")
    faults.clear_disk_full()
    assert r.status_code == 200 and "partial answer" in r.text
    events = [d for _, d in sse_events(r.text)]
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])["error"]
    assert error["code"] == "disk_full" and str(tmp_path / "state.db") in error["message"]
