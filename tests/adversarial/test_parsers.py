"""Property tests: the parsers that read user text either accept it or refuse it with their
own error, never crash (schedules, ids, notes files, the model's SSE stream)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.cron.schedule import ScheduleError, next_after_slot, parse_schedule
from hermes.memory.notes import parse_entries, serialize
from hermes.memory.scan import scan_text
from hermes.scopes import InvalidIdError, validate_id

FAST = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)

_cron_field = st.one_of(
    st.just("*"),
    st.integers(-5, 100).map(str),
    st.tuples(st.integers(0, 99), st.integers(0, 99)).map(lambda t: f"{t[0]}-{t[1]}"),
    st.tuples(st.sampled_from(["*", "1-5", "0"]), st.integers(0, 99)).map(
        lambda t: f"{t[0]}/{t[1]}"
    ),
    st.sampled_from(["mon-fri", "fri-mon", "jan-dec", "dec-jan", "L", "?", "1,2,3", "7"]),
)
_cron = st.lists(_cron_field, min_size=4, max_size=6).map(" ".join)
_duration = st.tuples(
    st.sampled_from(["in ", "every ", ""]),
    st.integers(-10, 10**20),
    st.sampled_from(["m", "h", "d", "minutes", "x"]),
).map(lambda t: f"{t[0]}{t[1]}{t[2]}")
_iso = st.datetimes(timezones=st.none() | st.timezones()).map(lambda d: d.isoformat())
_schedule = st.one_of(_cron, _duration, _iso, st.text(max_size=40))


@FAST
@given(_schedule)
def test_schedule_parser_accepts_or_refuses_cleanly(text: str) -> None:
    try:
        schedule = parse_schedule(text, now=NOW, tz=UTC)
    except ScheduleError:
        return
    if schedule["kind"] != "once":  # an accepted recurring schedule has a computable next run
        assert next_after_slot(schedule, slot=NOW, now=NOW, tz=UTC) is not None


@FAST
@given(st.text(max_size=300))
def test_ids_are_validated_cleanly(text: str) -> None:
    try:
        assert validate_id(text, what="session id") == text
    except InvalidIdError:
        return


_entry = (
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60)
    .map(str.strip)
    .filter(bool)
)


@FAST
@given(
    st.lists(st.one_of(_entry, st.sampled_from(["a\n§\nb", "\\§", " § ", "x\n\\\\§"])), max_size=6)
)
def test_notes_round_trip_through_the_file_format(entries: list[str]) -> None:
    entries = [e.replace("\r", "") for e in entries]
    entries = [e.strip() for e in entries if e.strip()]
    assert parse_entries(serialize(entries)) == entries


@FAST
@given(st.text(max_size=500))
def test_notes_parser_and_scanner_never_crash(text: str) -> None:
    for entry in parse_entries(text):
        scan_text(entry)
