"""One run of a job: a fresh cron session with a narrowed toolset, the job's skills and prompt,
an inactivity watchdog, and a Markdown output document kept per job."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from hermes.agent.loop import Agent
from hermes.agent.turn import TurnObserver, TurnRequest
from hermes.cron.outputs import save_output
from hermes.cron.store import Job
from hermes.errors import HermesError
from hermes.models.client import ModelClient
from hermes.models.errors import ModelError
from hermes.models.pinned import Pin, pinned_chain
from hermes.observability import tracing
from hermes.store.base import Store
from hermes.tools.toolsets import SURFACE_CRON

log = logging.getLogger(__name__)

SILENT_MARKER = "[SILENT]"
CRON_SYSTEM_NOTE = (
    "[SYSTEM: You are running as a scheduled cron job; nobody is watching live. DELIVERY: your "
    "final response is delivered to the user automatically, so do not try to send it yourself; "
    "write it as the message they should read. SILENT: if there is genuinely nothing new to "
    f'report, respond with exactly "{SILENT_MARKER}" and nothing else; never combine '
    f"{SILENT_MARKER} with other content.]"
)
RECENT_TURNS = 10
_TURN_CHARS = 2000
_FRONTMATTER = re.compile(r"^---\s*\n.*?\n---\s*\n", re.DOTALL)


class CronIdleError(HermesError):
    """The run produced no activity for longer than the inactivity limit."""


@dataclass
class RunResult:
    job_id: str
    scope: str
    session_id: str
    started_at: datetime
    status: str  # "ok" | "error"
    prompt: str
    response: str | None = None
    error: str | None = None
    output_path: Path | None = None

    @property
    def silent(self) -> bool:
        return self.status == "ok" and SILENT_MARKER.lower() in (self.response or "").lower()


class _Activity(TurnObserver):
    """Remembers when the turn last showed life (text streamed, a tool started or ended)."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.what = "waiting for the model"

    def _touch(self, what: str) -> None:
        self.last = time.monotonic()
        self.what = what

    def on_delta(self, text: str) -> None:
        self._touch("model output")

    def on_tool_start(self, call_id: str, name: str) -> None:
        self._touch(f"tool {name} started")

    def on_tool_end(self, call_id: str, name: str, ok: bool) -> None:
        self._touch(f"tool {name} finished")


# -------------------------------------------------------------------------- prompt


def find_skill(home: Path, name: str) -> Path | None:
    """skills/<category>/<name>/SKILL.md (or skills/<name>/SKILL.md, or 'category/name')."""
    root = home / "skills"
    direct = root / name / "SKILL.md"
    if direct.is_file():
        return direct
    if "/" not in name:
        for candidate in sorted(root.glob(f"*/{name}/SKILL.md")):
            if candidate.is_file():
                return candidate
    return None


def skill_body(path: Path) -> str:
    text = path.read_text(encoding="utf-8-sig")
    return _FRONTMATTER.sub("", text, count=1).strip()


def build_prompt(home: Path, job: Job) -> str:
    """The job prompt preceded by each skill's body; a missing skill is noted, not fatal."""
    parts: list[str] = []
    for name in job.get("skills") or []:
        path = find_skill(home, name)
        body = None
        if path is not None:
            try:
                body = skill_body(path)
            except (OSError, UnicodeDecodeError) as exc:
                log.warning("cron job %s: skill %s unreadable: %s", job.get("id"), name, exc)
        if body is None:
            parts.append(
                f'[SYSTEM: The job asks for the skill "{name}", but it is not installed; '
                "mention this in your answer so the user can fix the job.]"
            )
            continue
        parts.append(
            f'[SYSTEM: The job uses the skill "{name}"; its full instructions follow.]\n\n{body}'
        )
    prompt = (job.get("prompt") or "").strip()
    if parts and prompt:
        parts.append(f"The job's instruction alongside the skill(s):\n\n{prompt}")
    elif prompt:
        parts.append(prompt)
    return "\n\n".join(parts)


def _summary_of(store: Store, scope: str, session_id: str) -> str | None:
    """The session's latest compression summary, if one exists."""
    compaction = store.latest_compaction(scope, session_id)
    summary = compaction.summary.strip() if compaction is not None else ""
    return summary or None


def session_context(store: Store, scope: str, session_id: str) -> str | None:
    """What the job's linked session said lately (and its summary), for the run's system note."""
    session = store.get_session(scope, session_id)
    if session is None:
        return None
    start = max(0, session.message_count - RECENT_TURNS * 4)
    messages = store.get_messages(scope, session_id, start=start)
    turns = [m for m in messages if m.role in ("user", "assistant") and m.content]
    lines = [f"{m.role}: {(m.content or '')[:_TURN_CHARS]}" for m in turns[-RECENT_TURNS:]]
    summary = _summary_of(store, scope, session_id)
    if not lines and not summary:
        return None
    parts = [f"[Context from the conversation {session_id!r} this job was created in.]"]
    if summary:
        parts.append(f"Summary of the earlier conversation:\n{summary}")
    if lines:
        parts.append("Recent turns:\n" + "\n".join(lines))
    return "\n\n".join(parts)


# -------------------------------------------------------------------------- running


async def _watch(task: asyncio.Task[Any], activity: _Activity, limit: float, name: str) -> Any:
    """Await `task`, cancelling it once it has shown no activity for `limit` seconds."""
    if limit <= 0:
        return await task
    while True:
        remaining = limit - (time.monotonic() - activity.last)
        if remaining <= 0:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise CronIdleError(
                f"cron job {name!r} was idle for {limit:g}s (the inactivity limit); "
                f"last activity: {activity.what}"
            )
        done, _ = await asyncio.wait({task}, timeout=remaining)
        if done:
            return task.result()


def _session_id(agent: Agent, scope: str, job_id: str, started: datetime) -> str:
    base = f"cron_{job_id}_{started:%Y%m%d_%H%M%S}"
    candidate, n = base, 1
    while agent.store.get_session(scope, candidate) is not None:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


def _unsupported(job: Job) -> str | None:
    if job.get("script") or job.get("no_agent"):
        return (
            "this job uses a pre-run script, which this Hermes does not support; remove "
            "`script`/`no_agent` from the job (e.g. `hermes cron edit`) or recreate it"
        )
    return None


async def execute_job(
    agent: Agent, scope: str, job: Job, *, started: datetime, tz: tzinfo
) -> RunResult:
    """Run the job once through the agent and save the output document; never raises for a
    failed run (the error is in the result), only for cancellation. Each run is the root of
    its own trace."""
    attributes = {"hermes.cron.job": job["id"], "hermes.scope.hash": tracing.scope_hash(scope)}
    with tracing.root_span("hermes.cron.run", **attributes) as span:
        result = await _execute_job(agent, scope, job, started=started, tz=tz)
        span.set_attribute("hermes.cron.status", result.status)
        return result


async def _execute_job(
    agent: Agent, scope: str, job: Job, *, started: datetime, tz: tzinfo
) -> RunResult:
    local = started.astimezone(tz)
    session_id = await asyncio.to_thread(_session_id, agent, scope, job["id"], local)
    prompt = await asyncio.to_thread(build_prompt, agent.settings.home, job)
    result = RunResult(
        job_id=job["id"],
        scope=scope,
        session_id=session_id,
        started_at=local,
        status="error",
        prompt=prompt,
    )
    problem = _unsupported(job)
    if problem:
        result.error = problem
    else:
        await _run_agent(agent, scope, job, result)
    result.output_path = await asyncio.to_thread(
        save_output, agent.settings, scope, job, result, agent.store.documents
    )
    return result


def job_pins(job: Job) -> list[Pin]:
    """The job's own model and its fallbacks, in order; [] when it names none. A hand-edited
    entry that is not a name is skipped rather than failing the run."""
    model = job.get("model")
    if not isinstance(model, str) or not model.strip():
        return []
    base_url = job.get("base_url") if isinstance(job.get("base_url"), str) else None
    pins = [Pin(model.strip(), base_url or None)]
    for entry in job.get("fallbacks") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"]:
            url = entry.get("base_url")
            pins.append(Pin(entry["name"], url if isinstance(url, str) and url else None))
    return pins


def job_model(agent: Agent, job: Job) -> ModelClient | None:
    """The client a job's turn uses: its own models, then the configured chain; None when
    the job names no model (the agent's own client)."""
    pins = job_pins(job)
    if not pins:
        return None
    return pinned_chain(agent.settings, pins, agent.model, agent.store.records)


async def _run_agent(agent: Agent, scope: str, job: Job, result: RunResult) -> None:
    note = CRON_SYSTEM_NOTE
    if job.get("session_id"):
        context = await asyncio.to_thread(session_context, agent.store, scope, job["session_id"])
        note = f"{note}\n\n{context}" if context else note
    activity = _Activity()
    model = job_model(agent, job)
    request = TurnRequest(
        user_message=result.prompt or "(the job has no prompt)",
        session_id=result.session_id,
        scope=scope,
        source="cron",
        system_extra=note,
        # no memory writes, scheduling or direct messages: hermes.tools.toolsets
        toolset=agent.toolset_for(scope, SURFACE_CRON),
        model=model,
    )
    task = asyncio.ensure_future(agent.run_turn(request, activity))
    try:
        turn = await _watch(task, activity, agent.settings.cron.inactivity_timeout, job["name"])
    except asyncio.CancelledError:
        task.cancel()
        raise
    except CronIdleError as exc:
        result.error = str(exc)
    except ModelError as exc:
        result.error = str(exc)
    except Exception as exc:  # a run must end with a record, whatever broke
        log.exception("cron job %s failed", job["id"])
        result.error = f"{type(exc).__name__}: {exc}"
    else:
        result.status, result.response = "ok", turn.content
    finally:
        if model is not None:
            await model.aclose()


# -------------------------------------------------------------------------- output
