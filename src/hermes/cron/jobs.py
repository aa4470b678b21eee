"""Job operations shared by the API, the CLI and the `cronjob` tool: validate, then edit the store.

Every check names the offending field, so each surface can report it its own way (a 400 with
`param`, a CLI message, a tool error for the model).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from typing import Any

from hermes.cron.schedule import (
    ONE_SHOT_GRACE,
    ScheduleError,
    default_repeat,
    first_run,
    parse_repeat,
    parse_schedule,
    to_iso,
)
from hermes.cron.store import (
    Job,
    JobLimitError,
    JobStore,
    JobStoreError,
    find_job,
    new_job_id,
    output_dir,
)
from hermes.delivery import split_target
from hermes.errors import HermesError
from hermes.scopes import InvalidIdError, validate_id
from hermes.text import clean_surrogates

NAME_MAX = 200
PROMPT_MAX = 5000
PLATFORMS = (
    "telegram",
    "discord",
    "slack",
    "whatsapp",
    "signal",
    "matrix",
    "mattermost",
    "email",
    "sms",
    "homeassistant",
    "dingtalk",
    "feishu",
    "wecom",
    "weixin",
    "bluebubbles",
    "qqbot",
)
UPDATABLE = (
    "name",
    "schedule",
    "prompt",
    "deliver",
    "repeat",
    "skills",
    "enabled",
    "session_id",
    "model",
    "base_url",
    "fallbacks",
)
MODEL_NAME_MAX = 200
FALLBACKS_MAX = 5
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SKILL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?$")
_TARGET = re.compile(r"^[a-z]+(:\S+)?$")
_MODEL_NAME = re.compile(r"^\S+$")
_URL = re.compile(r"^https?://[^\s/?#]+[^\s]*$")


class JobInputError(HermesError, ValueError):
    """Bad input for a job; `field` names the offending field (the API's `param`)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class JobExistsError(JobStoreError):
    """A job of that name is already in the scope with another definition.

    Names are how people (and `hermes cron edit NAME`) find a job, so a second job under a
    taken name is refused rather than made ambiguous; `job` is the one already there.
    """

    def __init__(self, message: str, job: Job) -> None:
        super().__init__(message)
        self.job = job


# -------------------------------------------------------------------------- validation


def check_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise JobInputError("name must be a non-empty string", "name")
    value = value.strip()
    if len(value) > NAME_MAX:
        raise JobInputError(
            f"name is {len(value)} characters long; the limit is {NAME_MAX}", "name"
        )
    if _CONTROL.search(value) or "\n" in value:
        raise JobInputError("name must be one line without control characters", "name")
    _valid_unicode(value, "name")
    return value


def _valid_unicode(value: str, field: str) -> None:
    if clean_surrogates(value) != value:
        raise JobInputError(
            f"{field} holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape), "
            "which is not valid Unicode text",
            field,
        )


def check_prompt(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise JobInputError("prompt must be a string", "prompt")
    if len(value) > PROMPT_MAX:
        raise JobInputError(
            f"prompt is {len(value)} characters long; the limit is {PROMPT_MAX}", "prompt"
        )
    if _CONTROL.search(value):
        raise JobInputError("prompt contains control characters", "prompt")
    _valid_unicode(value, "prompt")
    return value


def check_skills(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise JobInputError("skills must be a list of skill names", "skills")
    skills: list[str] = []
    for name in (s.strip() for s in value):
        if not _SKILL.match(name) or ".." in name:
            raise JobInputError(
                f"skill {name!r} is not a skill name (letters, digits, . _ -, "
                "optionally 'category/name')",
                "skills",
            )
        if name not in skills:
            skills.append(name)
    return skills


def check_deliver(value: Any) -> str:
    """'local', 'origin', 'home', a webhook URL, a platform (its home chat) or
    platform:chat_id[:thread] (email:<address> for mail)."""
    if value is None:
        return "local"
    if not isinstance(value, str) or not value.strip():
        raise JobInputError("deliver must be a non-empty string such as 'local'", "deliver")
    targets = [t.strip() for t in value.split(",") if t.strip()]
    for target in targets:
        if target in ("local", "origin", "all", "home") or target.startswith(
            ("http://", "https://")
        ):
            continue
        platform = target.split(":", 1)[0]
        if not _TARGET.match(target) or platform not in PLATFORMS:
            raise JobInputError(
                f"deliver target {target!r} is not one of: 'local', 'home', a webhook URL "
                f"(https://…), a platform ({', '.join(PLATFORMS[:4])}, …), 'platform:chat_id' "
                "or 'email:<address>'",
                "deliver",
            )
    return ",".join(targets)


NOT_CHATS = frozenset({"cli", "api", "cron", "ui"})


def chat_of(platform: str, session_id: str | None) -> str | None:
    """The gateway chat (`<platform>:<chat>[:<thread>]`) a session belongs to, if any: gateway
    session ids are the chat's key, with `/N` after `/new`."""
    if platform in NOT_CHATS or not session_id or not session_id.startswith(f"{platform}:"):
        return None
    key, _, n = session_id.rpartition("/")
    return key if key and n.isdigit() else session_id


def origin_of(platform: str, session_id: str | None) -> dict[str, Any]:
    """Where a job was made, in the original's shape (`chat_id`, `thread_id`): `deliver:
    origin` sends its answers back there."""
    origin: dict[str, Any] = {"platform": platform, "session_id": session_id}
    chat = chat_of(platform, session_id)
    if chat:
        _, chat_id, thread_id = split_target(chat)
        origin["chat_id"] = chat_id
        if thread_id:
            origin["thread_id"] = thread_id
    return origin


def origin_target(job: Job) -> str:
    """What `origin` means for this job: the chat it was made in, else the home chat."""
    origin = job.get("origin")
    if not isinstance(origin, dict) or not origin.get("platform") or not origin.get("chat_id"):
        return "home"
    thread = origin.get("thread_id")
    target = f"{origin['platform']}:{origin['chat_id']}"
    return f"{target}:{thread}" if thread else target


def check_model(value: Any, field: str = "model") -> str | None:
    """A model name as the endpoint knows it (`gpt-4o-mini`, `qwen2.5:7b`); None: the configured."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not _MODEL_NAME.match(value.strip()):
        raise JobInputError(f"{field} must be a model name without spaces", field)
    value = value.strip()
    if len(value) > MODEL_NAME_MAX or _CONTROL.search(value):
        raise JobInputError(f"{field} must be at most {MODEL_NAME_MAX} printable characters", field)
    _valid_unicode(value, field)
    return value


def check_base_url(value: Any, field: str = "base_url") -> str | None:
    """An OpenAI-compatible endpoint (`https://host/v1`); None: the configured `model.base_url`."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not _URL.match(value.strip()) or _CONTROL.search(value):
        raise JobInputError(
            f"{field} must be an http(s) URL such as 'https://api.example.com/v1'", field
        )
    return value.strip().rstrip("/")


def check_fallbacks(value: Any) -> list[dict[str, str]]:
    """`[{name, base_url?}]`, tried in order after the job's model. Keys are not stored in a
    job (its record is readable over the API): the configured key for that endpoint is used."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise JobInputError("fallbacks must be a list of {name, base_url?} objects", "fallbacks")
    if len(value) > FALLBACKS_MAX:
        raise JobInputError(
            f"fallbacks holds {len(value)} models; the limit is {FALLBACKS_MAX}", "fallbacks"
        )
    entries: list[dict[str, str]] = []
    for i, entry in enumerate(value):
        where = f"fallbacks[{i}]"
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, dict):
            raise JobInputError(f"{where} must be an object {{name, base_url?}}", "fallbacks")
        if "api_key" in entry:
            raise JobInputError(
                f"{where}: a job stores no API keys; the key configured for that endpoint "
                "(model.api_key or a model.fallbacks entry) is used",
                "fallbacks",
            )
        unknown = sorted(set(entry) - {"name", "base_url"})
        if unknown:
            raise JobInputError(
                f"{where}: unknown field {unknown[0]!r} (name, base_url)", "fallbacks"
            )
        name = check_model(entry.get("name"), "fallbacks")
        if name is None:
            raise JobInputError(f"{where}: name is required", "fallbacks")
        item = {"name": name}
        base_url = check_base_url(entry.get("base_url"), "fallbacks")
        if base_url is not None:
            item["base_url"] = base_url
        entries.append(item)
    return entries


def _check_pins(job: Job) -> None:
    """`base_url` and `fallbacks` belong to a job's own model; alone they would pin nothing."""
    if job.get("model") is None and (job.get("base_url") or job.get("fallbacks")):
        raise JobInputError(
            "base_url and fallbacks need the job's own model; give `model` too", "model"
        )


def check_session_id(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise JobInputError("session_id must be a string", "session_id")
    try:
        return validate_id(value, what="session_id")
    except InvalidIdError as exc:
        raise JobInputError(str(exc), "session_id") from None


def check_repeat(value: Any) -> int | None:
    try:
        return parse_repeat(value)
    except ScheduleError as exc:
        raise JobInputError(str(exc), "repeat") from None


def check_schedule(store: JobStore, value: Any) -> dict[str, Any]:
    if not isinstance(value, str):
        raise JobInputError("schedule must be a string such as '0 9 * * 1-5'", "schedule")
    try:
        return parse_schedule(value, now=store.clock(), tz=store.tz)
    except ScheduleError as exc:
        raise JobInputError(str(exc), "schedule") from None


# -------------------------------------------------------------------------- operations


def _schedule_next(store: JobStore, job: Job) -> None:
    """Point next_run_at at the first future slot (create, resume, schedule change)."""
    now = store.clock()
    upcoming = first_run(job["schedule"], now=now, tz=store.tz)
    if job["schedule"].get("kind") == "once" and upcoming and upcoming < now - ONE_SHOT_GRACE:
        raise JobInputError(
            f"the one-shot time {job['schedule'].get('run_at')} has passed; give a new schedule",
            "schedule",
        )
    job["next_run_at"] = to_iso(upcoming, store.tz) if upcoming else None


# What makes two jobs "the same job": a create repeated with these equal returns the first.
DEFINITION = (
    "schedule",
    "prompt",
    "skills",
    "deliver",
    "repeat",
    "session_id",
    "model",
    "base_url",
    "fallbacks",
)


def _definition(job: Job) -> dict[str, Any]:
    repeat = job.get("repeat")
    return {
        "schedule": {k: v for k, v in (job.get("schedule") or {}).items() if k != "display"},
        "prompt": job.get("prompt") or "",
        "skills": list(job.get("skills") or []),
        "deliver": job.get("deliver") or "local",
        "repeat": repeat.get("times") if isinstance(repeat, dict) else None,
        "session_id": job.get("session_id"),
        "model": job.get("model"),
        "base_url": job.get("base_url"),
        "fallbacks": list(job.get("fallbacks") or []),
    }


def _same_name(jobs: list[Job], name: str) -> list[Job]:
    wanted = name.casefold()
    return [j for j in jobs if str(j.get("name", "")).strip().casefold() == wanted]


def _existing(jobs: list[Job], job: Job, *, named: bool) -> Job | None:
    """The job `job` repeats (same name and definition), else None; a job holding the name
    with another definition is a conflict when the caller chose the name."""
    holders = _same_name(jobs, job["name"])
    wanted = _definition(job)
    for other in holders:
        if _definition(other) == wanted:
            return other
    if holders and named:
        other = holders[0]
        theirs = _definition(other)
        differ = [k for k in DEFINITION if theirs[k] != wanted[k]]
        raise JobExistsError(
            f"a job named {other.get('name')!r} already exists in this scope "
            f"(id {other.get('id')}) with a different {', '.join(differ)}",
            other,
        )
    return None


def create_job(store: JobStore, **fields: Any) -> Job:
    """`ensure_job` for callers that need not know whether the job was new."""
    job, _created = ensure_job(store, **fields)
    return job


def ensure_job(
    store: JobStore,
    *,
    schedule: Any,
    prompt: Any = None,
    name: Any = None,
    deliver: Any = None,
    repeat: Any = None,
    skills: Any = None,
    session_id: Any = None,
    model: Any = None,
    base_url: Any = None,
    fallbacks: Any = None,
    paused: bool = False,
    origin: dict[str, Any] | None = None,
    max_jobs: int | None = None,
) -> tuple[Job, bool]:
    """Validate everything first, then add the job under the store lock; `(job, created)`.

    Creating is idempotent, so a setup script can run twice: the same name with the same
    definition returns the job already there (`created` False). A name given explicitly that
    another job holds with a different definition raises `JobExistsError`; `JobLimitError`
    when the scope already holds `max_jobs` jobs.
    """
    parsed = check_schedule(store, schedule)
    text = check_prompt(prompt)
    skill_list = check_skills(skills)
    if not text.strip() and not skill_list:
        raise JobInputError("prompt is required (or give skills for the job to run)", "prompt")
    times = check_repeat(repeat) if repeat is not None else default_repeat(parsed)
    label = check_name(name) if name is not None else (text.strip()[:50] or skill_list[0])
    now = store.clock()
    job: Job = {
        "id": new_job_id(),
        "name": label,
        "prompt": text,
        "skills": skill_list,
        "skill": skill_list[0] if skill_list else None,
        "model": check_model(model),
        "provider": None,
        "base_url": check_base_url(base_url),
        "fallbacks": check_fallbacks(fallbacks),
        "script": None,
        "schedule": parsed,
        "schedule_display": parsed["display"],
        "repeat": {"times": times, "completed": 0},
        "enabled": not paused,
        "state": "paused" if paused else "scheduled",
        "paused_at": to_iso(now, store.tz) if paused else None,
        "paused_reason": None,
        "created_at": to_iso(now, store.tz),
        "next_run_at": None,
        "last_run_at": None,
        "last_status": None,
        "last_error": None,
        "last_delivery_error": None,
        "deliver": check_deliver(deliver),
        "origin": origin,
        "session_id": check_session_id(session_id),
    }
    _check_pins(job)
    _schedule_next(store, job)
    created = False
    with store.edit(save_if=lambda: created) as jobs:
        existing = _existing(jobs, job, named=name is not None)
        if existing is not None:
            return existing, False
        if max_jobs is not None and len(jobs) >= max_jobs:
            raise JobLimitError(
                f"this scope already has {len(jobs)} jobs, the most cron.max_jobs allows "
                f"({max_jobs}); remove one first"
            )
        jobs.append(job)
        created = True
    return job, True


def _apply_changes(store: JobStore, job: Job, changes: Mapping[str, Any]) -> bool:
    """Set validated fields on `job`; True if the schedule must be recomputed."""
    reschedule = False
    if "name" in changes:
        job["name"] = check_name(changes["name"])
    if "prompt" in changes:
        job["prompt"] = check_prompt(changes["prompt"])
    if "skills" in changes:
        job["skills"] = check_skills(changes["skills"])
        job["skill"] = job["skills"][0] if job["skills"] else None
    if not job["prompt"].strip() and not job["skills"]:
        raise JobInputError("a job needs a prompt or skills; both would be empty", "prompt")
    if "deliver" in changes:
        job["deliver"] = check_deliver(changes["deliver"])
    if "session_id" in changes:
        job["session_id"] = check_session_id(changes["session_id"])
    if "model" in changes:
        job["model"] = check_model(changes["model"])
        if job["model"] is None:  # back to the configured model: its pins go with it
            job["base_url"], job["fallbacks"] = None, []
    if "base_url" in changes:
        job["base_url"] = check_base_url(changes["base_url"])
    if "fallbacks" in changes:
        job["fallbacks"] = check_fallbacks(changes["fallbacks"])
    _check_pins(job)
    if "schedule" in changes:
        parsed = check_schedule(store, changes["schedule"])
        if parsed.get("kind") != job["schedule"].get("kind") and "repeat" not in changes:
            job["repeat"]["times"] = default_repeat(parsed)
        job["schedule"], job["schedule_display"] = parsed, parsed["display"]
        reschedule = True
    if "repeat" in changes:
        job["repeat"]["times"] = check_repeat(changes["repeat"])
        reschedule = reschedule or job.get("state") == "completed"
    return reschedule


def update_job(store: JobStore, ref: str, changes: Mapping[str, Any]) -> Job:
    """Apply whitelisted changes; a finished job given runs left is scheduled again."""
    unknown = [k for k in changes if k not in UPDATABLE]
    if unknown:
        raise JobInputError(
            f"{unknown[0]!r} cannot be changed; updatable fields: {', '.join(UPDATABLE)}",
            unknown[0],
        )
    if not changes:
        raise JobInputError(f"nothing to change; give one of: {', '.join(UPDATABLE)}", "body")
    enabled = changes.get("enabled")
    if "enabled" in changes and not isinstance(enabled, bool):
        raise JobInputError("enabled must be true or false", "enabled")
    with store.edit() as jobs:
        job = find_job(jobs, ref)
        reschedule = _apply_changes(store, job, changes)
        if enabled is False:
            _pause(store, job, None)
        elif enabled is True or (reschedule and job.get("state") != "paused"):
            _resume(store, job)
    return job


def _runs_left(job: Job) -> bool:
    times, done = job["repeat"].get("times"), job["repeat"].get("completed") or 0
    return times is None or not isinstance(times, int) or times <= 0 or done < times


def _pause(store: JobStore, job: Job, reason: str | None) -> None:
    job["enabled"] = False
    job["state"] = "paused"
    job["next_run_at"] = None  # resume computes it afresh
    job["paused_at"] = to_iso(store.clock(), store.tz)
    job["paused_reason"] = reason


def _resume(store: JobStore, job: Job) -> None:
    if not _runs_left(job):
        raise JobInputError(
            f"job {job['id']} has finished its {job['repeat'].get('times')} run(s); "
            "raise `repeat` to run it again",
            "repeat",
        )
    if job["schedule"].get("kind") not in ("once", "interval", "cron"):
        raise JobInputError("the job has no usable schedule; set a new one", "schedule")
    _schedule_next(store, job)
    job["enabled"] = True
    job["state"] = "scheduled"
    job["paused_at"] = job["paused_reason"] = None


def pause_job(store: JobStore, ref: str, reason: str | None = None) -> Job:
    with store.edit() as jobs:
        job = find_job(jobs, ref)
        _pause(store, job, reason)
    return job


def resume_job(store: JobStore, ref: str) -> Job:
    with store.edit() as jobs:
        job = find_job(jobs, ref)
        _resume(store, job)
    return job


def remove_job(store: JobStore, ref: str) -> Job:
    """Delete the job and its saved outputs."""
    with store.edit() as jobs:
        job = find_job(jobs, ref)
        jobs.remove(job)
    shutil.rmtree(output_dir(store.home, store.scope, job["id"]), ignore_errors=True)
    return job


def is_running(job: Job) -> bool:
    return isinstance(job.get("run_claim"), dict)
