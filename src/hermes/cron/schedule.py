"""Schedule grammar and next-run arithmetic, on the configured IANA zone's wall clock.

A parsed schedule is the original product's dict, so existing jobs.json files load unchanged:
`{"kind": "once", "run_at": iso}`, `{"kind": "interval", "minutes": n}` or
`{"kind": "cron", "expr": "m h dom mon dow"}`, each with a human `display`.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hermes.errors import HermesError

ONE_SHOT_GRACE = timedelta(seconds=120)
# Longest delay or interval accepted: ten years. Beyond it date arithmetic overflows (year 9999)
# and no operator means it; a clear refusal beats a job that can never be computed.
MAX_MINUTES = 10 * 366 * 1440
# DST shifts are at most 2 h anywhere; near one we look this far around for the earliest slot.
_DST_WINDOW = timedelta(hours=3)

ACCEPTED_FORMS = (
    "Accepted forms: a 5-field cron expression such as '0 9 * * 1-5'; "
    "'every 30m', '30m', 'every 2h' or 'every day' (recurring); 'in 30m' or 'in 2h' (once); "
    "an ISO time such as '2030-06-01T09:00' (once, configured timezone unless it has an offset); "
    "'daily at 7am', 'weekdays at 9am', 'weekends at 10am', 'every monday 9am', "
    "'monday, wednesday at 9:30pm', 'daily at noon'."
)

_UNITS = {
    "m": 1,
    "min": 1,
    "mins": 1,
    "minute": 1,
    "minutes": 1,
    "h": 60,
    "hr": 60,
    "hrs": 60,
    "hour": 60,
    "hours": 60,
    "d": 1440,
    "day": 1440,
    "days": 1440,
}
_DURATION = re.compile(r"(\d+)\s*([a-z]+)")
_DAY_NAMES = {
    "sunday": 0,
    "sun": 0,
    "monday": 1,
    "mon": 1,
    "tuesday": 2,
    "tue": 2,
    "tues": 2,
    "wednesday": 3,
    "wed": 3,
    "thursday": 4,
    "thu": 4,
    "thur": 4,
    "thurs": 4,
    "friday": 5,
    "fri": 5,
    "saturday": 6,
    "sat": 6,
}
_DAY_WORDS = {
    "day": "*",
    "days": "*",
    "daily": "*",
    "everyday": "*",
    "weekday": "1-5",
    "weekdays": "1-5",
    "weekend": "0,6",
    "weekends": "0,6",
}
_TIME_AT_END = re.compile(
    r"^(?P<days>.*?)(?:\s+at)?\s+(?P<time>noon|midnight|\d{1,2}(?::\d{2})?\s*(?:am|pm)?)$"
)
_CRON_FIELD = re.compile(r"^[A-Za-z0-9*,/?\-]+$")
_CRON_TIME_FIELD = re.compile(r"^[0-9*,/\-]+$")
_ISO_START = re.compile(r"^\d{4}-\d{2}-\d{2}")
_FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")
_MONTHS = {m: i for i, m in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1
)}  # fmt: skip
_WEEKDAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}


class ScheduleError(HermesError, ValueError):
    """A schedule text that cannot be used; the message says why and lists what works."""


# -------------------------------------------------------------------------- timezone


def system_zone() -> tzinfo:
    """The machine's IANA zone (DST-aware), for when settings.timezone is not set."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    localtime = Path("/etc/localtime")
    try:
        with localtime.open("rb") as fh:
            return ZoneInfo.from_file(fh, key="localtime")
    except (OSError, ValueError):
        return UTC


def resolve_timezone(name: str | None) -> tzinfo:
    """The configured zone, else the system's; a bad name is a configuration error."""
    if not name:
        return system_zone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f"the configured timezone {name!r} is not an IANA zone name (e.g. 'Europe/Berlin')"
        ) from None


def to_iso(moment: datetime, tz: tzinfo) -> str:
    return moment.astimezone(tz).isoformat(timespec="seconds")


def from_iso(text: Any) -> datetime | None:
    """Parse a stored timestamp; None for missing or unreadable values (hand-edited files)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# -------------------------------------------------------------------------- parsing


def parse_duration(text: str) -> int | None:
    """'30m', '2 hours', '1d' → minutes; None when the text is not a duration at all."""
    match = _DURATION.fullmatch(text.strip())
    if not match or match.group(2) not in _UNITS:
        return None
    return int(match.group(1)) * _UNITS[match.group(2)]


def _positive(minutes: int, original: str) -> int:
    if minutes < 1:
        raise ScheduleError(f"the duration in {original!r} must be at least 1 minute")
    if minutes > MAX_MINUTES:
        raise ScheduleError(
            f"the duration in {original!r} is longer than ten years ({MAX_MINUTES:,} minutes); "
            "give a shorter one"
        )
    return minutes


def _interval(minutes: int) -> dict[str, Any]:
    if minutes % 1440 == 0:
        display = f"every {minutes // 1440}d"
    elif minutes % 60 == 0:
        display = f"every {minutes // 60}h"
    else:
        display = f"every {minutes}m"
    return {"kind": "interval", "minutes": minutes, "display": display}


def _parse_time(text: str, original: str) -> tuple[int, int]:
    text = text.replace(" ", "")
    if text == "noon":
        return 12, 0
    if text == "midnight":
        return 0, 0
    match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(am|pm)?", text)
    if not match:
        raise ScheduleError(f"cannot read the time in {original!r}. {ACCEPTED_FORMS}")
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half:
        if not 1 <= hour <= 12:
            raise ScheduleError(f"the hour in {original!r} must be 1-12 with am/pm")
        hour = hour % 12 + (12 if half == "pm" else 0)
    elif hour > 23:
        raise ScheduleError(f"the hour in {original!r} must be 0-23")
    if minute > 59:
        raise ScheduleError(f"the minutes in {original!r} must be 0-59")
    return hour, minute


def _parse_days(text: str, original: str) -> str | None:
    tokens = [t for t in re.split(r"[,\s]+", text) if t and t not in ("and", "&", "on")]
    if tokens and tokens[0] == "every":
        tokens = tokens[1:]
    if not tokens:
        return None
    if len(tokens) == 1 and tokens[0] in _DAY_WORDS:
        return _DAY_WORDS[tokens[0]]
    numbers: list[int] = []
    for token in tokens:
        name = token[:-1] if token.endswith("s") and token[:-1] in _DAY_NAMES else token
        if name not in _DAY_NAMES:
            return None
        if _DAY_NAMES[name] not in numbers:
            numbers.append(_DAY_NAMES[name])
    return ",".join(str(n) for n in sorted(numbers))


def _parse_phrase(text: str, original: str) -> dict[str, Any] | None:
    match = _TIME_AT_END.match(text)
    if not match:
        return None
    days = _parse_days(match.group("days"), original)
    if days is None:
        return None
    hour, minute = _parse_time(match.group("time"), original)
    return {"kind": "cron", "expr": f"{minute} {hour} * * {days}", "display": original}


def _parse_cron(text: str, original: str, now: datetime, tz: tzinfo) -> dict[str, Any] | None:
    fields = text.split()
    if len(fields) < 5 or not all(_CRON_FIELD.match(f) for f in fields):
        return None
    if not (_CRON_TIME_FIELD.match(fields[0]) and _CRON_TIME_FIELD.match(fields[1])):
        return None
    if len(fields) > 5:
        raise ScheduleError(
            f"{original!r} has {len(fields)} fields; cron expressions here have exactly 5 "
            "(minute hour day-of-month month day-of-week)"
        )
    _check_ranges(fields, original)
    expr = " ".join(fields)
    from croniter import CroniterBadDateError, croniter  # at first use: ~40 ms of import

    if not croniter.is_valid(expr):
        raise ScheduleError(
            f"{original!r} is not a valid cron expression (minute 0-59, hour 0-23, "
            f"day 1-31, month 1-12, weekday 0-6 or names). {ACCEPTED_FORMS}"
        )
    try:
        cron_next(expr, now, tz)
    except CroniterBadDateError:
        raise ScheduleError(f"{original!r} never matches a real date") from None
    return {"kind": "cron", "expr": expr, "display": expr}


def _range_end(text: str, names: dict[str, int]) -> int | None:
    text = text.lower()
    return int(text) if text.isdigit() else names.get(text)


def _check_ranges(fields: list[str], original: str) -> None:
    """Refuse backwards ranges (`1-0`, `fri-mon`): cron implementations disagree on them
    (croniter wraps around, others refuse), so a job would not run when its owner expects."""
    for position, field in enumerate(fields):
        names = _MONTHS if position == 3 else _WEEKDAYS if position == 4 else {}
        for part in field.split(","):
            low, dash, high = part.split("/")[0].partition("-")
            if not dash:
                continue
            start, end = _range_end(low, names), _range_end(high, names)
            if start is not None and end is not None and start > end:
                raise ScheduleError(
                    f"the range {part.split('/')[0]!r} in the {_FIELD_NAMES[position]} field of "
                    f"{original!r} goes backwards; write it low-high (e.g. '1-5'), or list "
                    "both ends ('22-23,0-2')"
                )


def _parse_iso(original: str, now: datetime, tz: tzinfo) -> dict[str, Any]:
    try:
        moment = datetime.fromisoformat(original.upper().replace(" ", "T", 1))
    except ValueError:
        raise ScheduleError(
            f"{original!r} looks like a date but is not a valid ISO time such as "
            "'2030-06-01T09:00' or '2030-06-01 09:00+02:00'"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    try:
        run_at = to_iso(moment, tz)
    except OverflowError:
        raise ScheduleError(
            f"{original!r} is outside the range of dates Hermes can schedule"
        ) from None
    if moment - now > timedelta(minutes=MAX_MINUTES):
        raise ScheduleError(f"{original!r} is more than ten years ahead; give a nearer time")
    if moment < now - ONE_SHOT_GRACE:
        raise ScheduleError(
            f"{original!r} is in the past (now is {to_iso(now, tz)}); give a future time"
        )
    return {"kind": "once", "run_at": run_at, "display": f"once at {run_at}"}


def parse_schedule(text: str, *, now: datetime, tz: tzinfo) -> dict[str, Any]:
    """Turn what a user typed into a schedule dict; ScheduleError names the problem."""
    if not isinstance(text, str) or not text.strip():
        raise ScheduleError(f"the schedule is empty. {ACCEPTED_FORMS}")
    original = " ".join(text.split())
    lowered = original.lower()
    if lowered.startswith("in "):
        minutes = parse_duration(lowered[3:])
        if minutes is None:
            raise ScheduleError(f"cannot read the delay in {original!r}. {ACCEPTED_FORMS}")
        run_at = to_iso(now + timedelta(minutes=_positive(minutes, original)), tz)
        return {"kind": "once", "run_at": run_at, "display": f"once in {lowered[3:]}"}
    bare = lowered[6:] if lowered.startswith("every ") else lowered
    minutes = parse_duration(bare)
    if minutes is None and lowered.startswith("every ") and bare in _UNITS:
        minutes = _UNITS[bare]
    if minutes is not None:
        return _interval(_positive(minutes, original))
    if _ISO_START.match(original):
        return _parse_iso(original, now, tz)
    parsed = _parse_cron(original, original, now, tz) or _parse_phrase(lowered, original)
    if parsed is None:
        raise ScheduleError(f"cannot understand the schedule {original!r}. {ACCEPTED_FORMS}")
    return parsed


def parse_repeat(value: Any) -> int | None:
    """How many runs before the job retires: a positive int, or None for forever."""
    if value is None or isinstance(value, bool):
        if isinstance(value, bool):
            raise ScheduleError("repeat must be a positive number of runs, or 'forever'")
        return None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("forever", "infinite", "none", "always", ""):
            return None
        if word == "once":
            return 1
        if not word.isdigit():
            raise ScheduleError(f"repeat {value!r} must be a positive number of runs, or 'forever'")
        value = int(word)
    if not isinstance(value, int) or value < 1:
        raise ScheduleError(f"repeat {value!r} must be a positive number of runs, or 'forever'")
    return value


def default_repeat(schedule: dict[str, Any]) -> int | None:
    return 1 if schedule.get("kind") == "once" else None


# -------------------------------------------------------------------------- next run


def _instant(wall: datetime, tz: tzinfo) -> datetime:
    """A wall-clock time as a UTC instant: ambiguous → first occurrence, skipped → shifted on."""
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)


def _dst_near(moment: datetime, tz: tzinfo) -> bool:
    before = (moment - _DST_WINDOW).astimezone(tz).utcoffset()
    after = (moment + _DST_WINDOW).astimezone(tz).utcoffset()
    return before != after or moment.astimezone(tz).utcoffset() != after


def cron_next(expr: str, after: datetime, tz: tzinfo) -> datetime:
    """The first instant after `after` whose wall-clock time in `tz` matches `expr`.

    Wall times skipped by a DST jump run once, shifted forward by the jump; repeated wall
    times run once, at their first occurrence. Raises CroniterBadDateError if never.
    """
    from croniter import CroniterBadDateError, croniter

    after_utc = after.astimezone(UTC)
    near = _dst_near(after_utc, tz)
    local = after_utc.astimezone(tz)
    start = (local - _DST_WINDOW) if near else local
    it = croniter(expr, start.replace(tzinfo=None))
    best: datetime | None = None
    horizon: datetime | None = None
    for _ in range(2000):
        wall = it.get_next(datetime)
        if horizon is not None and wall > horizon:
            break
        instant = _instant(wall, tz)
        if instant <= after_utc:
            continue
        if best is None or instant < best:
            best = instant
        if not near:
            break
        horizon = horizon or wall + _DST_WINDOW
    if best is None:
        raise CroniterBadDateError("failed to find next date")
    return best.astimezone(tz)


def first_run(schedule: dict[str, Any], *, now: datetime, tz: tzinfo) -> datetime | None:
    """When a new (or resumed) job should fire first."""
    kind = schedule.get("kind")
    if kind == "once":
        return from_iso(schedule.get("run_at"))
    if kind == "interval":
        return now + timedelta(minutes=int(schedule["minutes"]))
    if kind == "cron":
        return cron_next(str(schedule["expr"]), now, tz)
    raise ScheduleError(f"unknown schedule kind {kind!r}")


def next_after_slot(
    schedule: dict[str, Any], *, slot: datetime, now: datetime, tz: tzinfo
) -> datetime | None:
    """The next future occurrence after firing `slot` at `now`: missed slots collapse into one."""
    kind = schedule.get("kind")
    if kind == "once":
        return None
    if kind == "interval":
        step = timedelta(minutes=int(schedule["minutes"]))
        if slot > now:
            return slot + step
        return slot + step * ((now - slot) // step + 1)
    if kind == "cron":
        return cron_next(str(schedule["expr"]), max(now, slot), tz)
    raise ScheduleError(f"unknown schedule kind {kind!r}")


def describe(schedule: Any) -> str:
    if isinstance(schedule, dict):
        return str(schedule.get("display") or schedule.get("expr") or schedule.get("kind"))
    return str(schedule)
