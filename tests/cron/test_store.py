"""jobs.json: the original format loads, tolerant parsing, corrupt files kept, atomic locked saves."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC
from pathlib import Path

import pytest

from hermes.config.settings import Settings
from hermes.cron.jobs import (
    JobInputError,
    create_job,
    pause_job,
    remove_job,
    resume_job,
    update_job,
)
from hermes.cron.store import (
    AmbiguousJobError,
    JobNotFoundError,
    JobStore,
    JobStoreCorruptError,
    jobs_path,
)
from hermes.scopes import scope_root
from tests.cron.conftest import T0, Clock

ORIGINAL_RECORD = {
    "id": "a1b2c3d4e5f6",
    "name": "Morning brief",
    "prompt": "Summarise my inbox",
    "skills": ["inbox"],
    "skill": "inbox",
    "model": None,
    "provider": None,
    "base_url": None,
    "script": None,
    "schedule": {"kind": "cron", "expr": "0 7 * * *", "display": "0 7 * * *"},
    "schedule_display": "0 7 * * *",
    "repeat": {"times": None, "completed": 12},
    "enabled": True,
    "state": "scheduled",
    "paused_at": None,
    "paused_reason": None,
    "created_at": "2029-12-01T07:00:00+00:00",
    "next_run_at": "2030-01-08T07:00:00+00:00",
    "last_run_at": "2030-01-07T07:00:03+00:00",
    "last_status": "ok",
    "last_error": None,
    "last_delivery_error": None,
    "deliver": "telegram",
    "origin": {"platform": "telegram", "chat_id": "123"},
    "failure_streak": 0,
    "provider_snapshot": "openrouter",
}


def write(home: Path, payload: bytes | str) -> Path:
    path = home / "cron" / "jobs.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload.encode() if isinstance(payload, str) else payload)
    return path


def test_an_original_jobs_file_loads_and_round_trips_unknown_keys(
    store: JobStore, settings: Settings
) -> None:
    write(settings.home, json.dumps({"jobs": [ORIGINAL_RECORD], "updated_at": "x", "version": 3}))
    [job] = store.load()
    assert job["name"] == "Morning brief" and job["repeat"]["completed"] == 12
    pause_job(store, "a1b2c3d4e5f6")
    saved = json.loads(store.path.read_text())
    assert saved["version"] == 3
    assert saved["jobs"][0]["provider_snapshot"] == "openrouter"
    assert saved["jobs"][0]["origin"] == {"platform": "telegram", "chat_id": "123"}
    assert saved["jobs"][0]["state"] == "paused"


def test_bom_bare_list_and_control_characters_load(store: JobStore, settings: Settings) -> None:
    record = dict(ORIGINAL_RECORD, prompt="line one\tline two")
    write(settings.home, b"\xef\xbb\xbf" + json.dumps([record]).replace("\\t", "\t").encode())
    [job] = store.load()
    assert job["id"] == "a1b2c3d4e5f6" and job["prompt"] == "line one\tline two"


def test_id_keyed_map_is_flattened(store: JobStore, settings: Settings) -> None:
    record = {k: v for k, v in ORIGINAL_RECORD.items() if k != "id"}
    write(settings.home, json.dumps({"a1b2c3d4e5f6": record}))
    assert [j["id"] for j in store.load()] == ["a1b2c3d4e5f6"]


def test_hand_written_minimal_job_gets_defaults(store: JobStore, settings: Settings) -> None:
    write(
        settings.home,
        json.dumps({"jobs": [{"prompt": "Water the plants", "schedule": "every 2h"}]}),
    )
    [job] = store.load()
    assert len(job["id"]) == 12 and job["name"] == "Water the plants"
    assert job["schedule"]["kind"] == "interval" and job["repeat"] == {
        "times": None,
        "completed": 0,
    }
    assert job["next_run_at"] == (T0.replace(hour=10)).isoformat()


@pytest.mark.parametrize(
    "content", [b"{not json", b'{"jobs": 3}', b"[1, 2]", b"\xff\xfe\x00garbage"]
)
def test_corrupt_file_is_backed_up_reported_and_never_overwritten(
    store: JobStore, settings: Settings, content: bytes
) -> None:
    path = write(settings.home, content)
    with pytest.raises(JobStoreCorruptError) as err:
        store.load()
    assert "not a valid jobs file" in str(err.value) and "will not overwrite" in str(err.value)
    backups = list(path.parent.glob("jobs.corrupt-*.json"))
    assert len(backups) == 1 and backups[0].read_bytes() == content
    with pytest.raises(JobStoreCorruptError):
        create_job(store, schedule="every 1h", prompt="hi", name="x")
    assert path.read_bytes() == content
    with pytest.raises(JobStoreCorruptError):
        store.load()
    assert len(list(path.parent.glob("jobs.corrupt-*.json"))) == 1  # one backup per content


def test_saves_are_atomic_private_and_shaped_like_the_original(store: JobStore) -> None:
    job = create_job(store, schedule="0 9 * * 1-5", prompt="Standup notes", name="standup")
    data = json.loads(store.path.read_text())
    assert set(data) == {"jobs", "updated_at"}
    assert data["jobs"][0]["id"] == job["id"] and len(job["id"]) == 12
    assert all(c in "0123456789abcdef" for c in job["id"])
    assert (os.stat(store.path).st_mode & 0o777) == 0o600
    assert not [p for p in store.path.parent.iterdir() if p.name.endswith(".tmp")]


def test_find_by_id_or_unique_case_insensitive_name(store: JobStore) -> None:
    a = create_job(store, schedule="every 1h", prompt="a", name="Report")
    dup = create_job(store, schedule="every 1h", prompt="b", name="dup")
    with store.edit() as jobs:  # creating refuses a taken name; a hand-edited file may not
        jobs.append({**dup, "id": "0123456789ab", "name": "DUP", "prompt": "c"})
    assert store.get(a["id"])["name"] == "Report"
    assert store.get("report")["id"] == a["id"]
    with pytest.raises(AmbiguousJobError, match="use the id"):
        store.get("dup")
    with pytest.raises(JobNotFoundError):
        store.get("nothing")


def test_concurrent_creates_from_threads_all_survive(settings: Settings) -> None:
    def worker(i: int) -> None:
        local = JobStore(settings.home, "default", UTC, clock=Clock())
        for n in range(5):
            create_job(local, schedule="every 1h", prompt=f"job {i}-{n}", name=f"j{i}-{n}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    names = {j["name"] for j in JobStore(settings.home, "default", UTC).load()}
    assert len(names) == 20


def test_user_scopes_have_their_own_file(settings: Settings, clock: Clock) -> None:
    alice = JobStore(settings.home, "user:alice", UTC, clock=clock)
    create_job(alice, schedule="every 1h", prompt="hi", name="alice job")
    path = jobs_path(settings.home, "user:alice")
    assert path.parent.parent == scope_root(settings.home, "user:alice")
    assert json.loads(path.read_text())["scope"] == "user:alice"
    assert JobStore(settings.home, "default", UTC).load() == []


def test_input_errors_name_the_field(store: JobStore) -> None:
    cases = [
        (dict(schedule="nope", prompt="x"), "schedule"),
        (dict(schedule="every 1h", prompt="x" * 5001), "prompt"),
        (dict(schedule="every 1h", prompt="   "), "prompt"),
        (dict(schedule="every 1h", prompt="x", name="n" * 201), "name"),
        (dict(schedule="every 1h", prompt="x", deliver="carrier pigeon"), "deliver"),
        (dict(schedule="every 1h", prompt="x", repeat=0), "repeat"),
        (dict(schedule="every 1h", prompt="x", skills=["../etc"]), "skills"),
        (dict(schedule="every 1h", prompt="x", session_id="bad id!"), "session_id"),
    ]
    for kwargs, field in cases:
        with pytest.raises(JobInputError) as err:
            create_job(store, **kwargs)
        assert err.value.field == field, kwargs
    assert not store.path.exists()


def test_update_pause_resume_remove(store: JobStore, settings: Settings, clock: Clock) -> None:
    job = create_job(store, schedule="every 1h", prompt="x", name="hourly")
    assert job["next_run_at"] == "2030-01-07T09:00:00+00:00"
    updated = update_job(store, "hourly", {"schedule": "daily at 7am", "repeat": 2})
    assert updated["schedule"]["expr"] == "0 7 * * *" and updated["repeat"]["times"] == 2
    assert updated["next_run_at"] == "2030-01-08T07:00:00+00:00"
    with pytest.raises(JobInputError) as err:
        update_job(store, job["id"], {"id": "ffffffffffff"})
    assert err.value.field == "id"
    paused = pause_job(store, job["id"], "holiday")
    assert paused["state"] == "paused" and paused["enabled"] is False
    clock.advance(days=3)
    resumed = resume_job(store, job["id"])
    assert resumed["state"] == "scheduled" and resumed["next_run_at"] == "2030-01-11T07:00:00+00:00"
    out = settings.home / "cron" / "output" / job["id"]
    out.mkdir(parents=True)
    (out / "x.md").write_text("old")
    remove_job(store, job["id"])
    assert store.load() == [] and not out.exists()


def test_resuming_a_passed_one_shot_is_refused(store: JobStore, clock: Clock) -> None:
    job = create_job(store, schedule="in 30m", prompt="x", name="soon", paused=True)
    clock.advance(hours=2)
    with pytest.raises(JobInputError, match="has passed"):
        resume_job(store, job["id"])


def test_large_files_are_saved_one_job_per_line(settings: Settings, clock: Clock) -> None:
    from hermes.cron.ticker import quick_summary

    alice = JobStore(settings.home, "user:alice", UTC, clock=clock)
    first = create_job(alice, schedule="every 1h", prompt="seed", name="seed")
    data = json.loads(alice.path.read_text())
    data["jobs"] = [dict(first, id=f"{n:012x}", name=f"job {n}") for n in range(600)]
    alice.path.write_text(json.dumps(data))
    pause_job(alice, "job 7")
    text = alice.path.read_text()
    assert text.startswith('{\n"scope": "user:alice",\n"jobs": [\n{')
    assert len(text.splitlines()) == 3 + 600 + 3  # {, scope, "jobs": [ … ], updated_at, }
    reloaded = json.loads(text)
    assert len(reloaded["jobs"]) == 600 and reloaded["jobs"][7]["state"] == "paused"
    scope, earliest, claimed = quick_summary(text.encode(), default=False)
    assert scope == "user:alice" and earliest == T0.replace(hour=9) and not claimed
