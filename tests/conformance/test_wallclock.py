"""Time and duration formats as the battery grades them."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.conformance.wallclock import (
    clock_forms,
    iso_duration_seconds,
    parse_instant,
    parse_wall_clock,
    wall_clock_to_instants,
    zone,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("PT45M", 2700), ("PT1H30M", 5400), ("P1D", 86400), ("PT0.5S", 0.5), ("P1W", 604800), ("PT6H", 21600)],
)
def test_iso_durations_are_read(text, seconds):
    """OSBP spec, Time Discipline: durations are ISO 8601 strings such as PT45M."""
    assert iso_duration_seconds(text) == seconds


@pytest.mark.parametrize("text", [45, "45", "PT", "P", "45M", "PT45", "P1M", "pt45m", None])
def test_non_durations_are_refused(text):
    """OSBP spec, Time Discipline: not bare integers, and no calendar months of unknown length."""
    assert iso_duration_seconds(text) is None


def test_instants_need_an_offset_and_wall_clocks_must_not_have_one():
    """OSBP spec, Time Discipline: instants carry Z or an offset, wall-clock values carry none."""
    assert parse_instant("2026-05-05T20:00:00.000Z") == dt.datetime(2026, 5, 5, 20, tzinfo=dt.UTC)
    assert parse_instant("2026-05-05T13:00:00-07:00") is not None
    assert parse_instant("2026-05-05T20:00:00") is None
    assert parse_wall_clock("2026-05-05T13:00:00") == dt.datetime(2026, 5, 5, 13)
    assert parse_wall_clock("2026-05-05T13:00:00Z") is None
    assert parse_wall_clock("2026-05-05T13:00:00-07:00") is None


def test_the_spec_example_converts_through_the_schedule_timezone():
    """OSBP spec, availability.find: 13:00 America/Los_Angeles is 20:00Z on 2026-05-05."""
    assert wall_clock_to_instants(dt.datetime(2026, 5, 5, 13), "America/Los_Angeles") == {
        dt.datetime(2026, 5, 5, 20, tzinfo=dt.UTC)
    }


def test_a_fold_accepts_either_instant():
    """OSBP spec, Time Discipline: an ambiguous fall-back wall-clock denotes two instants."""
    instants = wall_clock_to_instants(dt.datetime(2030, 11, 3, 1, 30), "America/New_York")
    assert instants == {
        dt.datetime(2030, 11, 3, 5, 30, tzinfo=dt.UTC),
        dt.datetime(2030, 11, 3, 6, 30, tzinfo=dt.UTC),
    }


def test_unknown_zones_are_an_error_not_a_guess():
    """OSBP spec, Time Discipline: IANA names only."""
    with pytest.raises(ValueError, match="unknown IANA zone"):
        zone("Mars/Olympus_Mons")
    with pytest.raises(ValueError, match="not an IANA zone name"):
        zone("../etc/passwd")


def test_clock_forms_cover_24_and_12_hour_prose():
    """Platform choice: a summary may say 14:30 or 2:30 PM."""
    assert set(clock_forms(dt.time(14, 30))) == {"14:30", "2:30"}
    assert set(clock_forms(dt.time(9, 5))) == {"09:05", "9:05"}


@given(
    st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1)),
    st.sampled_from(
        ["America/New_York", "Europe/London", "Europe/Berlin", "Asia/Tokyo", "Australia/Lord_Howe"]
    ),
)
def test_every_instant_is_among_the_instants_of_its_own_wall_clock(moment, timezone):
    """OSBP spec, Time Discipline: wall-clock plus IANA zone recovers the instant, DST folds included."""
    instant = moment.replace(microsecond=0, tzinfo=dt.UTC)
    local = instant.astimezone(zone(timezone)).replace(tzinfo=None)
    assert instant in wall_clock_to_instants(local, timezone)
