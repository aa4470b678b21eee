"""The schedule grammar (each form, each error) and next-run times across DST changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from hermes.cron.schedule import (
    ACCEPTED_FORMS,
    ScheduleError,
    cron_next,
    first_run,
    next_after_slot,
    parse_repeat,
    parse_schedule,
    resolve_timezone,
)

NOW = datetime(2030, 1, 7, 8, 0, tzinfo=UTC)  # a Monday
NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def parse(text: str, tz=UTC, now=NOW):
    return parse_schedule(text, now=now, tz=tz)


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("every 30m", 30),
        ("30m", 30),
        ("every 2h", 120),
        ("2h", 120),
        ("every 2 hours", 120),
        ("every hour", 60),
        ("every day", 1440),
        ("1d", 1440),
        ("every 45 minutes", 45),
        ("EVERY 10 MIN", 10),
    ],
)
def test_recurring_intervals(text: str, minutes: int) -> None:
    schedule = parse(text)
    assert schedule["kind"] == "interval" and schedule["minutes"] == minutes


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("in 30m", timedelta(minutes=30)),
        ("in 2h", timedelta(hours=2)),
        ("in 1d", timedelta(days=1)),
    ],
)
def test_in_duration_is_a_one_shot(text: str, delta: timedelta) -> None:
    schedule = parse(text)
    assert schedule["kind"] == "once"
    assert datetime.fromisoformat(schedule["run_at"]) == NOW + delta


def test_cron_expressions_including_names() -> None:
    assert parse("0 9 * * 1-5") == {"kind": "cron", "expr": "0 9 * * 1-5", "display": "0 9 * * 1-5"}
    assert parse("  */15   *  * * mon-fri ")["expr"] == "*/15 * * * mon-fri"
    assert parse("0 0 1 jan *")["kind"] == "cron"


@pytest.mark.parametrize(
    ("text", "expr"),
    [
        ("every monday 9am", "0 9 * * 1"),
        ("weekdays at 9am", "0 9 * * 1-5"),
        ("daily at 7am", "0 7 * * *"),
        ("weekends at 10am", "0 10 * * 0,6"),
        ("monday, wednesday at 9am", "0 9 * * 1,3"),
        ("every day at 9:30pm", "30 21 * * *"),
        ("daily at noon", "0 12 * * *"),
        ("every day at midnight", "0 0 * * *"),
        ("mon and fri at 14:05", "5 14 * * 1,5"),
        ("every weekday at 7", "0 7 * * 1-5"),
        ("sundays at 12am", "0 0 * * 0"),
        ("everyday at 12pm", "0 12 * * *"),
    ],
)
def test_phrases_become_cron(text: str, expr: str) -> None:
    schedule = parse(text)
    assert schedule["kind"] == "cron" and schedule["expr"] == expr
    assert schedule["display"] == text


def test_iso_timestamps_are_one_shots_naive_in_the_configured_zone() -> None:
    naive = parse("2030-01-08T09:00", tz=BERLIN)
    assert datetime.fromisoformat(naive["run_at"]) == datetime(2030, 1, 8, 8, 0, tzinfo=UTC)
    with_offset = parse("2030-01-08 09:00+00:00", tz=BERLIN)
    assert datetime.fromisoformat(with_offset["run_at"]) == datetime(2030, 1, 8, 9, 0, tzinfo=UTC)
    zulu = parse("2030-01-08T09:00:00Z")
    assert datetime.fromisoformat(zulu["run_at"]) == datetime(2030, 1, 8, 9, 0, tzinfo=UTC)
    assert parse("2030-02-01")["kind"] == "once"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("every fortnight", "cannot understand"),
        ("soon please", "cannot understand"),
        ("every 30", "cannot understand"),
        ("every 0m", "at least 1 minute"),
        ("in 0h", "at least 1 minute"),
        ("in a while", "cannot read the delay"),
        ("61 9 * * *", "not a valid cron expression"),
        ("0 9 * * 1-5 2030", "exactly 5"),
        ("0 0 30 2 *", "never matches"),
        ("daily at 25:00", "0-23"),
        ("daily at 13pm", "1-12"),
        ("daily at 9:75", "0-59"),
        ("2020-01-01T09:00", "in the past"),
        ("2030-13-01", "not a valid ISO time"),
        ("funday at 9am", "cannot understand"),
    ],
)
def test_bad_schedules_are_refused_with_a_reason(text: str, fragment: str) -> None:
    with pytest.raises(ScheduleError) as err:
        parse(text)
    assert fragment in str(err.value)


def test_unknown_text_lists_every_accepted_form() -> None:
    with pytest.raises(ScheduleError) as err:
        parse("whenever")
    message = str(err.value)
    assert ACCEPTED_FORMS in message
    for form in (
        "0 9 * * 1-5",
        "every 30m",
        "30m",
        "every 2h",
        "in 30m",
        "daily at 7am",
        "weekdays at 9am",
        "every monday 9am",
        "2030-06-01T09:00",
    ):
        assert form in message


def test_a_slightly_late_one_shot_is_accepted() -> None:
    assert parse((NOW - timedelta(seconds=60)).isoformat())["kind"] == "once"


@pytest.mark.parametrize(
    ("value", "times"),
    [(None, None), (3, 3), ("3", 3), ("forever", None), ("once", 1), ("Infinite", None)],
)
def test_repeat_values(value, times) -> None:
    assert parse_repeat(value) == times


@pytest.mark.parametrize("value", [0, -2, "0", "twice", True, 1.5])
def test_bad_repeat_values(value) -> None:
    with pytest.raises(ScheduleError, match="positive number"):
        parse_repeat(value)


def test_unknown_timezone_is_a_clear_error() -> None:
    with pytest.raises(ScheduleError, match="not an IANA zone"):
        resolve_timezone("Mars/Olympus")
    assert resolve_timezone("Europe/Berlin") == BERLIN


# ---------------------------------------------------------------------- next run / DST


def test_weekday_nine_am_stays_nine_local_across_spring_forward() -> None:
    expr = parse("0 9 * * 1-5", tz=NY)["expr"]
    friday = cron_next(expr, datetime(2030, 3, 8, 15, 0, tzinfo=UTC), NY)  # after Fri 10:00 EST
    assert friday.astimezone(UTC) == datetime(2030, 3, 11, 13, 0, tzinfo=UTC)  # Mon 09:00 EDT
    before = cron_next(expr, datetime(2030, 3, 7, 0, 0, tzinfo=UTC), NY)
    assert before.astimezone(UTC) == datetime(2030, 3, 7, 14, 0, tzinfo=UTC)  # Thu 09:00 EST
    assert friday.astimezone(NY).hour == before.astimezone(NY).hour == 9


def test_skipped_wall_time_runs_once_shifted_by_the_jump() -> None:
    # 2030-03-10: New York clocks jump 02:00 → 03:00; 02:30 does not exist that day.
    first = cron_next("30 2 * * *", datetime(2030, 3, 10, 5, 0, tzinfo=UTC), NY)
    assert first.astimezone(UTC) == datetime(2030, 3, 10, 7, 30, tzinfo=UTC)  # 03:30 EDT
    second = cron_next("30 2 * * *", first, NY)
    assert second.astimezone(UTC) == datetime(2030, 3, 11, 6, 30, tzinfo=UTC)  # next day 02:30


def test_repeated_wall_time_runs_once_at_its_first_occurrence() -> None:
    # 2030-11-03: New York clocks fall back 02:00 → 01:00; 01:30 happens twice.
    first = cron_next("30 1 * * *", datetime(2030, 11, 3, 4, 0, tzinfo=UTC), NY)
    assert first.astimezone(UTC) == datetime(2030, 11, 3, 5, 30, tzinfo=UTC)  # 01:30 EDT
    second = cron_next("30 1 * * *", first, NY)
    assert second.astimezone(UTC) == datetime(2030, 11, 4, 6, 30, tzinfo=UTC)  # not 06:30 same day


def test_half_hourly_job_through_the_gap_never_goes_backwards() -> None:
    moment = datetime(2030, 3, 10, 6, 0, tzinfo=UTC)  # 01:00 EST
    seen = []
    for _ in range(5):
        moment = cron_next("*/30 * * * *", moment, NY)
        seen.append(moment.astimezone(UTC).strftime("%H:%M"))
    assert seen == ["06:30", "07:00", "07:30", "08:00", "08:30"]


def test_berlin_daily_job_across_autumn_change() -> None:
    schedule = parse("daily at 7am", tz=BERLIN)
    saturday = datetime(2030, 10, 26, 6, 0, tzinfo=UTC)  # 08:00 CEST, after the day's run
    sunday = first_run(schedule, now=saturday, tz=BERLIN)
    assert sunday.astimezone(UTC) == datetime(2030, 10, 27, 6, 0, tzinfo=UTC)  # 07:00 CET
    monday = next_after_slot(schedule, slot=sunday, now=sunday, tz=BERLIN)
    assert monday.astimezone(UTC) == datetime(2030, 10, 28, 6, 0, tzinfo=UTC)


def test_missed_interval_slots_collapse_to_the_next_future_one() -> None:
    schedule = parse("every 1h")
    slot = NOW
    upcoming = next_after_slot(
        schedule, slot=slot, now=NOW + timedelta(hours=5, minutes=10), tz=UTC
    )
    assert upcoming == NOW + timedelta(hours=6)
    assert next_after_slot(schedule, slot=slot, now=slot, tz=UTC) == NOW + timedelta(hours=1)


def test_missed_cron_slots_collapse_to_the_next_future_one() -> None:
    schedule = parse("0 * * * *")
    upcoming = next_after_slot(schedule, slot=NOW, now=NOW + timedelta(hours=3, minutes=1), tz=UTC)
    assert upcoming == NOW + timedelta(hours=4)
