"""Time discipline: zones from tzdata, wall-clock vs instants, the DST rule, durations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.protocol.timeutil import (
    combine_wall_clock,
    format_instant,
    has_offset,
    instant_to_wall_clock,
    load_zone,
    minutes_to_duration,
    parse_duration_minutes,
    parse_instant,
    parse_wall_clock,
    wall_clock_to_instant,
)


def is_nonexistent(local: datetime, zone: tzinfo) -> bool:
    """True when the naive ``local`` falls in a DST gap of ``zone`` (it does not survive a UTC round trip)."""
    aware = local.replace(tzinfo=zone, fold=0)
    return aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != local.replace(fold=0)


def is_ambiguous(local: datetime, zone: tzinfo) -> bool:
    """True when the naive ``local`` occurs twice in ``zone`` (a repeated hour)."""
    first, second = local.replace(tzinfo=zone, fold=0), local.replace(tzinfo=zone, fold=1)
    return not is_nonexistent(local, zone) and first.utcoffset() != second.utcoffset()


ZONES = [
    "America/New_York",
    "Europe/Berlin",
    "Europe/London",
    "Australia/Lord_Howe",
    "America/Los_Angeles",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "UTC",
]


def test_zones_load_from_the_tzdata_package_not_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader reads the tzdata package, so TZ and system zone files cannot change results (platform
    choice)."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    zone = load_zone("America/Los_Angeles")
    assert isinstance(zone, ZoneInfo)
    assert zone.key == "America/Los_Angeles"
    assert load_zone("America/Los_Angeles") is zone  # cached
    assert wall_clock_to_instant("2026-05-05T13:00:00", "America/Los_Angeles") == "2026-05-05T20:00:00Z"


@pytest.mark.parametrize("name", ["Nowhere/City", "../etc/passwd", "", "zone.tab", "America/", "/UTC"])
def test_unknown_zone_is_none_and_instants_are_not_guessed(name: str) -> None:
    """An unknown timezone leaves the instant absent rather than guessed (OSBP spec, Time Discipline)."""
    assert load_zone(name) is None
    assert wall_clock_to_instant("2026-05-05T13:00:00", name) is None


@pytest.mark.parametrize("value", ["2026-05-05T13:00:00", "2026-05-05T13:00", "2026-05-05T13:00:00.5"])
def test_wall_clock_strings_without_offset_parse(value: str) -> None:
    """Wall-clock strings are offset-free ISO local date-times (OSBP spec, Time Discipline)."""
    parsed = parse_wall_clock(value)
    assert parsed is not None
    assert parsed.tzinfo is None
    assert not has_offset(value)


@pytest.mark.parametrize(
    "value",
    ["2026-05-05T13:00:00Z", "2026-05-05T13:00:00+02:00", "2026-05-05T13:00:00-0700", "2026-05-05T13:00z"],
)
def test_wall_clock_with_offset_is_rejected(value: str) -> None:
    """Wall-clock values never carry Z or an offset (OSBP spec, Time Discipline)."""
    assert parse_wall_clock(value) is None
    assert has_offset(value)


@pytest.mark.parametrize(
    ("value", "utc"),
    [
        ("2026-05-01T23:59:59-07:00", datetime(2026, 5, 2, 6, 59, 59, tzinfo=UTC)),
        ("2026-05-05T20:00:00.000Z", datetime(2026, 5, 5, 20, tzinfo=UTC)),
        ("2026-05-05T20:00:00.123456789Z", datetime(2026, 5, 5, 20, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_instants_require_an_offset(value: str, utc: datetime) -> None:
    """Instants are RFC 3339 with Z or an explicit offset (OSBP spec, BookingMandate expires_at)."""
    assert parse_instant(value) == utc


@pytest.mark.parametrize("value", ["2026-05-01T23:59:59", "2026-05-01", "2026-05-01T23:59Z", "yesterday"])
def test_naked_or_malformed_instants_are_rejected(value: str) -> None:
    """Naked wall-clock strings are not instants (OSBP spec, BookingMandate expires_at)."""
    assert parse_instant(value) is None


def test_instants_are_emitted_in_utc_with_z() -> None:
    """Emitted instants always carry an explicit offset (platform choice)."""
    berlin = load_zone("Europe/Berlin")
    assert format_instant(datetime(2026, 7, 1, 12, tzinfo=berlin)) == "2026-07-01T10:00:00Z"
    with pytest.raises(ValueError, match="aware"):
        format_instant(datetime(2026, 7, 1, 12))


@pytest.mark.parametrize(
    ("zone", "local", "instant"),
    [
        # Gaps shift forward by the gap length (fold=0 reads the pre-transition offset).
        ("America/New_York", "2026-03-08T02:30:00", "2026-03-08T07:30:00Z"),
        ("Europe/Berlin", "2026-03-29T02:15:00", "2026-03-29T01:15:00Z"),
        ("Europe/London", "2026-03-29T01:30:00", "2026-03-29T01:30:00Z"),
        ("Australia/Lord_Howe", "2026-10-04T02:15:00", "2026-10-03T15:45:00Z"),
        # Ambiguous times take the earlier instant.
        ("America/New_York", "2026-11-01T01:30:00", "2026-11-01T05:30:00Z"),
        ("Europe/Berlin", "2026-10-25T02:30:00", "2026-10-25T00:30:00Z"),
        ("Europe/London", "2026-10-25T01:30:00", "2026-10-25T00:30:00Z"),
        ("Australia/Lord_Howe", "2026-04-05T01:45:00", "2026-04-04T14:45:00Z"),
    ],
)
def test_dst_rule_gap_shifts_forward_ambiguous_takes_earlier(zone: str, local: str, instant: str) -> None:
    """Documented DST rule: gap -> shift forward by the gap; fold -> earlier instant (platform choice)."""
    assert wall_clock_to_instant(local, zone) == instant


def test_gap_and_fold_detection() -> None:
    """The test helpers tell gap and fold apart per zone, including Lord Howe's 30-minute shift."""
    ny, lh = load_zone("America/New_York"), load_zone("Australia/Lord_Howe")
    assert ny is not None
    assert lh is not None
    assert is_nonexistent(datetime(2026, 3, 8, 2, 30), ny)
    assert not is_ambiguous(datetime(2026, 3, 8, 2, 30), ny)
    assert is_ambiguous(datetime(2026, 11, 1, 1, 30), ny)
    assert is_nonexistent(datetime(2026, 10, 4, 2, 15), lh)
    assert not is_nonexistent(datetime(2026, 10, 4, 2, 30), lh)
    assert is_ambiguous(datetime(2026, 4, 5, 1, 45), lh)
    assert not is_ambiguous(datetime(2026, 4, 5, 2, 0), lh)


@given(
    st.sampled_from(ZONES),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2037, 12, 31)).map(
        lambda d: d.replace(microsecond=0)
    ),
)
def test_wall_clock_round_trips_through_the_instant_except_in_gaps(zone_name: str, local: datetime) -> None:
    """wall-clock -> instant -> wall-clock is the identity outside gaps, a forward shift inside (property)."""
    zone = load_zone(zone_name)
    assert zone is not None
    wall = local.isoformat(timespec="seconds")
    instant = wall_clock_to_instant(wall, zone_name)
    assert instant is not None
    assert instant.endswith("Z")
    back = instant_to_wall_clock(instant, zone_name)
    assert back is not None
    back_dt = datetime.fromisoformat(back)
    if is_nonexistent(local, zone):
        assert timedelta(0) < back_dt - local <= timedelta(hours=2)
    else:
        assert back_dt == local
    if is_ambiguous(local, zone):
        other = local.replace(tzinfo=zone, fold=1).astimezone(UTC)
        parsed = parse_instant(instant)
        assert parsed is not None
        assert parsed < other


@given(st.sampled_from(ZONES), st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2037, 12, 31)))
def test_instant_round_trips_through_the_wall_clock_outside_folds(zone_name: str, moment: datetime) -> None:
    """instant -> wall-clock -> instant is the identity unless the wall-clock is ambiguous (property)."""
    zone = load_zone(zone_name)
    assert zone is not None
    instant = format_instant(moment.replace(tzinfo=UTC, microsecond=0))
    wall = instant_to_wall_clock(instant, zone_name)
    assert wall is not None
    assert not has_offset(wall)
    again = wall_clock_to_instant(wall, zone_name)
    if not is_ambiguous(datetime.fromisoformat(wall), zone):
        assert again == instant


def test_combine_wall_clock_joins_date_and_time() -> None:
    """booking.create date/time round-trip from starts_at_local (OSBP spec, booking.create)."""
    assert combine_wall_clock("2026-05-05", "13:00") == "2026-05-05T13:00:00"
    assert combine_wall_clock("2026-05-05", "13:00Z") is None
    assert combine_wall_clock("2026-02-30", "13:00") is None


@pytest.mark.parametrize(
    ("minutes", "text"),
    [(45, "PT45M"), (60, "PT1H"), (90, "PT1H30M"), (360, "PT6H"), (15, "PT15M"), (0, "PT0M")],
)
def test_durations_use_hours_and_minutes_normal_form(minutes: int, text: str) -> None:
    """Durations are ISO 8601 strings, not bare integers (OSBP spec, Time Discipline)."""
    assert minutes_to_duration(minutes) == text
    assert parse_duration_minutes(text) == minutes


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("PT60M", 60),
        ("PT6H", 360),
        ("P1D", 1440),
        ("PT90S", None),
        ("P", None),
        ("PT", None),
        ("45", None),
        ("P1DT", None),
    ],
)
def test_duration_parser_reads_spec_forms(text: str, minutes: int | None) -> None:
    """The spec's PT60M/PT6H/PT15M forms parse; partial minutes do not (OSBP spec, examples)."""
    assert parse_duration_minutes(text) == minutes


@given(st.integers(min_value=0, max_value=100_000))
def test_duration_round_trip(minutes: int) -> None:
    """minutes -> duration -> minutes is the identity (property)."""
    assert parse_duration_minutes(minutes_to_duration(minutes)) == minutes
