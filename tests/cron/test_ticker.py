"""The scheduler in-process, with an injected clock: runs, catch-up, repeats, delivery, outputs."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from datetime import UTC, timedelta

import pytest

from hermes.config.settings import Settings
from hermes.cron.jobs import create_job, pause_job
from hermes.cron.store import JobStore
from hermes.cron.ticker import JobRunningError, Scheduler, quick_summary
from hermes.runtime import Runtime
from hermes.scopes import scope_root
from hermes.store.base import NewMessage
from hermes.testing.fake_model import Error, FakeModel, Hang, Text
from tests.cron.conftest import T0, Clock, Webhook, outputs, read_jobs


def tool_names(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


async def test_a_due_job_runs_once_in_a_fresh_cron_session(
    store: JobStore,
    scheduler: Scheduler,
    clock: Clock,
    fake: FakeModel,
    runtime: Runtime,
    settings: Settings,
) -> None:
    fake.default = Text("Three things happened today.")
    job = create_job(store, schedule="every 1h", prompt="What happened today?", name="news")
    assert await scheduler.tick() == []
    clock.advance(hours=1)
    [result] = await scheduler.tick()
    assert result.status == "ok" and result.response == "Three things happened today."
    assert result.session_id == f"cron_{job['id']}_20300107_090000"
    [request] = fake.chat_requests()
    assert request["messages"][-1] == {"role": "user", "content": "What happened today?"}
    system = "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")
    assert "[SILENT]" in system and "delivered to the user automatically" in system
    assert not tool_names(request) & {"cronjob", "memory", "send_message"}
    assert "session_search" in tool_names(request)
    session = runtime.store.get_session("default", result.session_id)
    assert session is not None and session.source == "cron"
    [doc] = outputs(settings.home, job["id"])
    assert doc.name == "2030-01-07_09-00-00.md"
    text = doc.read_text()
    assert "## Prompt\n\nWhat happened today?" in text
    assert "## Response\n\nThree things happened today." in text
    [saved] = read_jobs(settings.home)
    assert saved["last_status"] == "ok" and saved["last_run_at"] == "2030-01-07T09:00:00+00:00"
    assert saved["next_run_at"] == "2030-01-07T10:00:00+00:00" and "run_claim" not in saved
    assert saved["last_output"] == doc.name
    assert await scheduler.tick() == []  # same slot again: nothing
    assert len(fake.chat_requests()) == 1


async def test_missed_slots_run_once_on_catch_up(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    fake.default = Text("caught up")
    create_job(store, schedule="every 1h", prompt="hourly check", name="hourly")
    clock.advance(hours=5, minutes=30)  # Hermes was down for five slots
    assert len(await scheduler.tick()) == 1
    assert len(await scheduler.tick()) == 0
    [saved] = read_jobs(settings.home)
    assert saved["next_run_at"] == "2030-01-07T14:00:00+00:00"
    assert saved["repeat"]["completed"] == 1
    assert len(fake.chat_requests()) == 1
    assert scheduler.stats.late == 1 and scheduler.stats.runs["ok"] == 1  # for /metrics


async def test_the_background_ticker_catches_up_on_start(
    store: JobStore, runtime: Runtime, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    fake.default = Text("morning")
    job = create_job(store, schedule="0 7 * * *", prompt="morning brief", name="brief")
    clock.advance(days=3)  # three 07:00 slots missed while stopped
    scheduler = Scheduler(runtime.agent, clock=clock)
    scheduler.start()
    try:
        await asyncio.to_thread(fake.wait_for_requests, 1)
        await scheduler.drain()
    finally:
        await scheduler.stop()
    assert len(fake.chat_requests()) == 1
    assert len(outputs(settings.home, job["id"])) == 1


async def test_repeat_count_retires_the_job(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    fake.default = Text("ok")
    job = create_job(store, schedule="every 1h", prompt="twice", name="twice", repeat=2)
    for _ in range(2):
        clock.advance(hours=1)
        assert len(await scheduler.tick()) == 1
    [saved] = read_jobs(settings.home)
    assert saved["state"] == "completed" and saved["enabled"] is False
    assert saved["repeat"] == {"times": 2, "completed": 2} and saved["next_run_at"] is None
    clock.advance(hours=1)
    assert await scheduler.tick() == []
    assert len(outputs(settings.home, job["id"])) == 2


async def test_one_shot_runs_once_then_completes(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    fake.default = Text("reminder sent")
    create_job(store, schedule="in 30m", prompt="remind me", name="reminder")
    clock.advance(minutes=29)
    assert await scheduler.tick() == []
    clock.advance(minutes=2)
    assert len(await scheduler.tick()) == 1
    clock.advance(days=1)
    assert await scheduler.tick() == []
    [saved] = read_jobs(settings.home)
    assert saved["state"] == "completed" and saved["last_status"] == "ok"


async def test_paused_jobs_do_not_run(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel
) -> None:
    job = create_job(store, schedule="every 1h", prompt="x", name="x")
    pause_job(store, job["id"])
    clock.advance(hours=3)
    assert await scheduler.tick() == []
    assert fake.chat_requests() == []


async def test_silent_answer_is_saved_but_not_delivered(
    store: JobStore,
    scheduler: Scheduler,
    clock: Clock,
    fake: FakeModel,
    webhook: Webhook,
    settings: Settings,
) -> None:
    fake.enqueue(Text("[silent]"), when=lambda body: body["messages"][-1]["content"] == "quiet")
    fake.enqueue(Text("Big news!"), when=lambda body: body["messages"][-1]["content"] == "loud")
    quiet = create_job(
        store, schedule="every 1h", prompt="quiet", name="quiet", deliver=webhook.url
    )
    create_job(store, schedule="every 1h", prompt="loud", name="loud", deliver=webhook.url)
    clock.advance(hours=1)
    assert len(await scheduler.tick()) == 2
    assert [b["content"] for b in webhook.bodies] == ["Big news!"]
    assert webhook.attempts == 1
    assert "[silent]" in outputs(settings.home, quiet["id"])[0].read_text()
    assert {j["last_status"] for j in read_jobs(settings.home)} == {"ok"}


async def test_webhook_delivery_retries_until_it_succeeds(
    store: JobStore,
    scheduler: Scheduler,
    clock: Clock,
    fake: FakeModel,
    webhook: Webhook,
    settings: Settings,
) -> None:
    fake.default = Text("Your report")
    webhook.statuses = [500, 503]
    job = create_job(
        store, schedule="every 1h", prompt="report", name="report", deliver=webhook.url
    )
    clock.advance(hours=1)
    await scheduler.tick()
    assert webhook.attempts == 3
    [body] = webhook.bodies
    assert body["job_id"] == job["id"] and body["content"] == "Your report"
    assert body["status"] == "ok" and body["session_id"].startswith(f"cron_{job['id']}_")
    [saved] = read_jobs(settings.home)
    assert saved["last_status"] == "ok" and saved["last_delivery_error"] is None


async def test_webhook_that_keeps_failing_marks_delivery_failed(
    store: JobStore,
    scheduler: Scheduler,
    clock: Clock,
    fake: FakeModel,
    webhook: Webhook,
    settings: Settings,
) -> None:
    fake.default = Text("Your report")
    webhook.statuses = [500, 500, 500, 500]
    create_job(store, schedule="every 1h", prompt="report", name="report", deliver=webhook.url)
    clock.advance(hours=1)
    await scheduler.tick()
    assert webhook.attempts == 3
    [saved] = read_jobs(settings.home)
    assert saved["last_status"] == "delivery_failed"
    assert "after 3 attempt(s): HTTP 500" in saved["last_delivery_error"]


async def test_webhook_client_errors_are_not_retried(
    store: JobStore,
    scheduler: Scheduler,
    clock: Clock,
    fake: FakeModel,
    webhook: Webhook,
    settings: Settings,
) -> None:
    fake.default = Text("x")
    webhook.statuses = [404]
    create_job(store, schedule="every 1h", prompt="report", name="report", deliver=webhook.url)
    clock.advance(hours=1)
    await scheduler.tick()
    assert webhook.attempts == 1
    assert "HTTP 404" in read_jobs(settings.home)[0]["last_delivery_error"]


async def test_private_webhook_destinations_are_refused_by_default(
    store: JobStore,
    scheduler: Scheduler,
    clock: Clock,
    fake: FakeModel,
    settings: Settings,
) -> None:
    receiver = Webhook()  # on loopback; the settings keep the default (public destinations only)
    try:
        fake.default = Text("secret report")
        create_job(store, schedule="every 1h", prompt="x", name="ssrf", deliver=receiver.url)
        clock.advance(hours=1)
        [result] = await scheduler.tick()
    finally:
        receiver.close()
    assert result.status == "ok"
    assert receiver.attempts == 0
    [saved] = read_jobs(settings.home)
    assert saved["last_status"] == "delivery_failed"
    assert "127.0.0.1, a loopback address" in saved["last_delivery_error"]
    assert "cron.webhook_allow_private" in saved["last_delivery_error"]


async def test_allowed_private_webhook_is_called_by_address_with_its_host_name(
    store: JobStore,
    scheduler: Scheduler,
    clock: Clock,
    fake: FakeModel,
    webhook: Webhook,
    settings: Settings,
) -> None:
    fake.default = Text("report")
    by_name = webhook.url.replace("127.0.0.1", "localhost")
    create_job(store, schedule="every 1h", prompt="x", name="named", deliver=by_name)
    clock.advance(hours=1)
    await scheduler.tick()
    assert [b["content"] for b in webhook.bodies] == ["report"]
    assert webhook.hosts == [by_name.split("/")[2]]  # "localhost:<port>", as the URL said


async def test_gateway_targets_fail_clearly_while_the_platform_is_not_configured(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    fake.default = Text("hello chat")
    create_job(store, schedule="every 1h", prompt="x", name="tg", deliver="telegram:12345")
    clock.advance(hours=1)
    [result] = await scheduler.tick()
    assert result.status == "ok"
    [saved] = read_jobs(settings.home)
    assert saved["last_status"] == "delivery_failed"
    # the gateway part now registers the platform deliverers: they say what is missing
    error = saved["last_error"]
    assert "telegram" in error and ("not configured" in error or "nothing can deliver" in error)
    assert saved["last_delivery_error"] == saved["last_error"]


async def test_a_failed_run_saves_the_error_and_notifies_the_webhook(
    store: JobStore,
    scheduler: Scheduler,
    clock: Clock,
    fake: FakeModel,
    webhook: Webhook,
    settings: Settings,
) -> None:
    fake.default = Error(500, "upstream exploded")
    job = create_job(store, schedule="every 1h", prompt="x", name="fragile", deliver=webhook.url)
    clock.advance(hours=1)
    [result] = await scheduler.tick()
    assert result.status == "error"
    doc = outputs(settings.home, job["id"])[0].read_text()
    assert doc.startswith("# Cron Job: fragile (FAILED)") and "## Error" in doc
    [saved] = read_jobs(settings.home)
    assert saved["last_status"] == "error" and saved["failure_streak"] == 1
    assert webhook.bodies[0]["content"].startswith("⚠️ Cron 'fragile' failed:")


async def test_an_idle_run_is_stopped_by_the_inactivity_timeout(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    settings.cron.inactivity_timeout = 0.3
    fake.enqueue(Hang(30))
    create_job(store, schedule="every 1h", prompt="x", name="sleepy")
    clock.advance(hours=1)
    [result] = await scheduler.tick()
    assert result.status == "error" and "idle for 0.3s" in (result.error or "")
    assert read_jobs(settings.home)[0]["last_status"] == "error"


async def test_skills_are_loaded_and_a_missing_one_is_noted(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    skill = settings.home / "skills" / "research" / "digest" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: digest\ndescription: d\n---\nCollect three headlines.\n")
    fake.default = Text("done")
    create_job(
        store, schedule="every 1h", prompt="Focus on Go.", name="d", skills=["digest", "ghost"]
    )
    clock.advance(hours=1)
    await scheduler.tick()
    prompt = fake.chat_requests()[0]["messages"][-1]["content"]
    assert "Collect three headlines." in prompt and "description: d" not in prompt
    assert '"ghost", but it is not installed' in prompt
    assert prompt.endswith("Focus on Go.")


async def test_a_job_with_a_session_sees_its_recent_turns(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, runtime: Runtime
) -> None:
    runtime.store.ensure_session("default", "chat-1", source="api")
    runtime.store.append_messages(
        "default",
        "chat-1",
        [
            NewMessage(role="user", content="I am building a todo app in Go."),
            NewMessage(role="assistant", content="Nice, Go is a good fit."),
        ],
    )
    fake.default = Text("checked")
    create_job(store, schedule="every 1h", prompt="Any Go news?", name="go", session_id="chat-1")
    clock.advance(hours=1)
    await scheduler.tick()
    system = "\n".join(
        m["content"] for m in fake.chat_requests()[0]["messages"] if m["role"] == "system"
    )
    assert "user: I am building a todo app in Go." in system
    assert "assistant: Nice, Go is a good fit." in system


async def test_manual_run_leaves_the_schedule_alone_and_refuses_overlap(
    store: JobStore, scheduler: Scheduler, fake: FakeModel, settings: Settings
) -> None:
    fake.enqueue(Hang(0.5, Text("manual answer")))
    job = create_job(store, schedule="every 1h", prompt="x", name="m", repeat=3)
    _, task = await scheduler.start_run("default", job["id"])
    with pytest.raises(JobRunningError, match="already running"):
        await scheduler.start_run("default", job["id"])
    result = await task
    assert result.response == "manual answer"
    [saved] = read_jobs(settings.home)
    assert saved["next_run_at"] == job["next_run_at"] and saved["repeat"]["completed"] == 0
    assert saved["last_status"] == "ok" and "run_claim" not in saved


async def test_user_scope_jobs_run_in_their_scope(
    settings: Settings, scheduler: Scheduler, clock: Clock, fake: FakeModel, runtime: Runtime
) -> None:
    alice = JobStore(settings.home, "user:alice", UTC, clock=clock)
    job = create_job(alice, schedule="every 1h", prompt="for alice", name="a")
    fake.default = Text("hi alice")
    clock.advance(hours=1)
    [result] = await scheduler.tick()
    assert result.scope == "user:alice"
    assert runtime.store.get_session("user:alice", result.session_id) is not None
    assert runtime.store.get_session("default", result.session_id) is None
    assert len(outputs(scope_root(settings.home, "user:alice"), job["id"])) == 1
    assert not (settings.home / "cron" / "output" / job["id"]).exists()


async def test_only_the_newest_outputs_are_kept(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    settings.cron.output_retention = 2
    fake.default = Text("x")
    job = create_job(store, schedule="every 1h", prompt="x", name="x")
    for _ in range(3):
        clock.advance(hours=1)
        await scheduler.tick()
    names = [p.name for p in outputs(settings.home, job["id"])]
    assert names == ["2030-01-07_10-00-00.md", "2030-01-07_11-00-00.md"]


async def test_a_stale_claim_from_a_dead_process_is_closed_not_rerun(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    job = create_job(store, schedule="every 1h", prompt="x", name="x", repeat=1)
    data = json.loads(store.path.read_text())
    data["jobs"][0]["run_claim"] = {
        "at": (T0 - timedelta(days=2)).isoformat(),
        "by": "elsewhere:4242:abcd",
        "kind": "scheduled",
    }
    data["jobs"][0]["repeat"]["completed"] = 1
    data["jobs"][0]["next_run_at"] = None
    store.path.write_text(json.dumps(data))
    assert await scheduler.tick() == []
    [saved] = read_jobs(settings.home)
    assert "run_claim" not in saved and saved["last_status"] == "error"
    assert "interrupted" in saved["last_error"] and saved["state"] == "completed"
    assert fake.chat_requests() == [] and job["id"] == saved["id"]


# ---------------------------------------------------------------------- cheap ticks


def test_quick_summary_is_a_safe_lower_bound() -> None:
    jobs = [
        {
            "id": "a" * 12,
            "schedule": {"kind": "interval", "minutes": 60},
            "prompt": 'text with "next_run_at": "2000-01-01T00:00:00+00:00" and "run_claim"',
            "next_run_at": "2030-01-07T10:00:00+00:00",
        },
        {
            "id": "b" * 12,
            "schedule": {"kind": "cron", "expr": "0 9 * * *"},
            "next_run_at": "2030-01-07T09:00:00+01:00",
        },
        {"id": "c" * 12, "schedule": {"kind": "once"}, "next_run_at": None},
    ]
    raw = json.dumps({"jobs": jobs}, indent=2).encode()
    scope, earliest, claimed = quick_summary(raw, default=True)
    assert scope == "default" and claimed is False
    assert earliest == T0  # 09:00+01:00 is 08:00 UTC, the earliest; the prompt text is ignored
    user = json.dumps({"scope": "user:x", "jobs": jobs}).encode()
    assert quick_summary(user, default=False)[0] == "user:x"
    assert (
        quick_summary(json.dumps({"jobs": jobs, "scope": "user:x"}).encode(), default=False) is None
    )
    missing = json.dumps({"jobs": [{"prompt": "x", "schedule": "every 1h"}]}).encode()
    assert quick_summary(missing, default=True) is None


async def test_a_hand_edit_is_noticed_by_the_next_tick(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    fake.default = Text("edited")
    job = create_job(store, schedule="every 1h", prompt="x", name="x")
    assert await scheduler.tick() == []  # cached: nothing due before 09:00
    data = json.loads(store.path.read_text())
    data["jobs"][0]["next_run_at"] = "2030-01-07T07:59:00+00:00"
    store.path.write_text(json.dumps(data, indent=4))
    stat = store.path.stat()
    os.utime(store.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    [result] = await scheduler.tick()
    assert result.job_id == job["id"]


async def test_a_hand_written_job_without_next_run_is_scheduled_and_saved(
    scheduler: Scheduler, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    path = settings.home / "cron" / "jobs.json"
    path.write_text(json.dumps([{"prompt": "Water the plants", "schedule": "every 30m"}]))
    assert await scheduler.tick() == []
    [saved] = read_jobs(settings.home)
    assert saved["next_run_at"] == "2030-01-07T08:30:00+00:00" and len(saved["id"]) == 12
    fake.default = Text("watered")
    clock.advance(minutes=30)
    assert len(await scheduler.tick()) == 1


async def test_a_job_with_a_compressed_session_sees_its_summary(
    store: JobStore, scheduler: Scheduler, clock: Clock, fake: FakeModel, runtime: Runtime
) -> None:
    runtime.store.ensure_session("default", "long-chat", source="api")
    runtime.store.append_messages(
        "default",
        "long-chat",
        [
            NewMessage(role="user", content="old question"),
            NewMessage(role="assistant", content="old"),
            NewMessage(role="user", content="Keep it short."),
            NewMessage(role="assistant", content="ok"),
        ],
    )
    runtime.store.add_compaction(
        "default",
        "long-chat",
        head_end=0,
        upto_idx=2,
        summary="## Goal\nShip the todo app by Friday.",
        kind="model",
    )
    fake.default = Text("checked")
    create_job(store, schedule="every 1h", prompt="Progress?", name="p", session_id="long-chat")
    clock.advance(hours=1)
    await scheduler.tick()
    system = "\n".join(
        m["content"] for m in fake.chat_requests()[0]["messages"] if m["role"] == "system"
    )
    assert "Ship the todo app by Friday." in system and "user: Keep it short." in system


async def test_runs_are_limited_to_max_parallel(
    store: JobStore, runtime: Runtime, clock: Clock, fake: FakeModel, settings: Settings
) -> None:
    settings.cron.max_parallel = 2
    release, arrived = threading.Event(), threading.Semaphore(0)

    def slow_answer(body: dict) -> Text:
        arrived.release()
        release.wait(10)
        return Text("done")

    fake.default = slow_answer
    for n in range(3):
        create_job(store, schedule="every 1h", prompt=f"job {n}", name=f"job {n}")
    clock.advance(hours=1)
    scheduler = Scheduler(runtime.agent, clock=clock)
    tick = asyncio.ensure_future(scheduler.tick())
    try:
        for _ in range(2):
            assert await asyncio.to_thread(arrived.acquire, True, 10)
        # the third run waits for a free slot instead of calling the model
        assert not await asyncio.to_thread(arrived.acquire, True, 0.3)
    finally:
        release.set()
    assert len(await tick) == 3
    await scheduler.stop()


async def test_a_job_removed_while_it_runs_stays_removed(
    store: JobStore, scheduler: Scheduler, fake: FakeModel, settings: Settings
) -> None:
    from hermes.cron.jobs import remove_job

    fake.enqueue(Hang(0.3, Text("late answer")))
    job = create_job(store, schedule="every 1h", prompt="x", name="doomed")
    _, task = await scheduler.start_run("default", job["id"])
    await asyncio.to_thread(fake.wait_for_requests, 1)
    await asyncio.to_thread(remove_job, store, job["id"])
    assert (await task).status == "ok"
    assert read_jobs(settings.home) == [] and outputs(settings.home, job["id"]) == []
