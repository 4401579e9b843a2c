"""Availability: computed slots within hours, on the grid, DST-correct, never over a provider's bookings."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.backend.availability import local_openings, native_weekday, to_instant
from osbp.backend.tz import zone
from tests.support.bookwell import DAY, booking, create

# The platform's rules hold on both engines (SQLite, PostgreSQL).
pytestmark = pytest.mark.both_engines


def _starts(hours, tz_name, day, grid=30, duration=30):
    return [
        o.local_start.strftime("%H:%M") for o in local_openings(hours, zone(tz_name), day, grid, duration)
    ]


def _sunday(open_: str, close: str):
    return [{"weekday": 0, "open": open_, "close": close}]


def test_weekday_numbering_starts_at_sunday_zero():
    """Platform choice (native dialect): weekday 0 is Sunday, 6 is Saturday."""
    assert native_weekday(date(2026, 5, 3)) == 0
    assert native_weekday(date(2026, 5, 4)) == 1
    assert native_weekday(date(2026, 5, 9)) == 6


def test_new_york_spring_forward_offers_no_slot_in_the_missing_hour():
    """Platform choice (availability): no slot at a local time that does not exist (2026-03-08 02:00-03:00
    NY)."""
    starts = _starts(_sunday("00:00", "04:00"), "America/New_York", date(2026, 3, 8))
    assert starts == ["00:00", "00:30", "01:00", "01:30", "03:00", "03:30"]


def test_new_york_spring_forward_measures_duration_in_elapsed_time():
    """Platform choice (availability): the whole duration must fit before closing, in real elapsed time."""
    openings = local_openings(_sunday("01:00", "03:30"), zone("America/New_York"), date(2026, 3, 8), 30, 90)
    assert [(o.local_start.strftime("%H:%M"), o.local_end.strftime("%H:%M")) for o in openings] == [
        ("01:00", "03:30")
    ]


def test_new_york_fall_back_offers_an_ambiguous_time_once_at_its_first_occurrence():
    """Platform choice (availability): ambiguous local times resolve to the first occurrence (documented
    rule)."""
    openings = local_openings(_sunday("00:00", "04:00"), zone("America/New_York"), date(2026, 11, 1), 30, 30)
    starts = [o.local_start.strftime("%H:%M") for o in openings]
    assert starts == ["00:00", "00:30", "01:00", "01:30", "02:00", "02:30", "03:00", "03:30"]
    one_thirty = openings[3]
    assert datetime.fromtimestamp(one_thirty.start_utc, UTC) == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    assert one_thirty.local_end.strftime("%H:%M") == "01:00"  # 30 elapsed minutes later, clocks went back


def test_berlin_spring_forward_skips_two_oclock():
    """Platform choice (availability): Berlin 2026-03-29 has no 02:00-02:59."""
    assert _starts(_sunday("01:00", "04:00"), "Europe/Berlin", date(2026, 3, 29)) == [
        "01:00",
        "01:30",
        "03:00",
        "03:30",
    ]


def test_berlin_fall_back_resolves_two_thirty_to_summer_time():
    """Platform choice (availability): Berlin 2026-10-25 02:30 happens twice; the first (CEST, UTC+2) is
    meant."""
    openings = local_openings(_sunday("02:00", "04:00"), zone("Europe/Berlin"), date(2026, 10, 25), 30, 30)
    two_thirty = next(o for o in openings if o.local_start.strftime("%H:%M") == "02:30")
    assert datetime.fromtimestamp(two_thirty.start_utc, UTC) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)


def test_london_spring_forward_skips_one_oclock():
    """Platform choice (availability): London 2026-03-29 has no 01:00-01:59."""
    assert _starts(_sunday("00:00", "03:00"), "Europe/London", date(2026, 3, 29)) == [
        "00:00",
        "00:30",
        "02:00",
        "02:30",
    ]


def test_london_fall_back_resolves_one_thirty_to_british_summer_time():
    """Platform choice (availability): London 2026-10-25 01:30 is taken as BST (UTC+1), the first
    occurrence."""
    instant = to_instant(datetime(2026, 10, 25, 1, 30), zone("Europe/London"))
    assert instant == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert to_instant(datetime(2026, 3, 29, 1, 30), zone("Europe/London")) is None


def test_split_shift_offers_nothing_over_the_break():
    """Platform choice (data): several periods a day (split shift); a slot must fit inside one period."""
    hours = [
        {"weekday": 3, "open": "08:00", "close": "12:00"},
        {"weekday": 3, "open": "13:00", "close": "15:00"},
    ]
    starts = _starts(hours, "America/New_York", date(2026, 5, 6), grid=15, duration=45)
    assert "11:15" in starts
    assert "11:30" not in starts
    assert "12:00" not in starts
    assert starts[starts.index("11:15") + 1] == "13:00"
    assert starts[-1] == "14:15"


def test_hours_past_midnight_continue_into_the_next_day():
    """OSBP spec, Time Discipline (operating hours): a close earlier than open runs into the following day."""
    hours = [{"weekday": 5, "open": "22:00", "close": "01:00"}]
    friday = _starts(hours, "America/New_York", date(2026, 5, 8), grid=30, duration=30)
    saturday = _starts(hours, "America/New_York", date(2026, 5, 9), grid=30, duration=30)
    assert friday == ["22:00", "22:30", "23:00", "23:30"]
    assert saturday == ["00:00", "00:30"]


def test_closed_day_is_an_empty_list_not_an_error(client):
    """Platform choice (availability): a closed day is an empty list."""
    response = client.get(
        "/api/organizations/carolyns_dental/availability",
        params={"service_id": "carolyns_dental_cleaning", "date": "2026-05-10"},
    )
    assert response.status_code == 200
    assert response.json()["slots"] == []


def test_online_location_serves_slots_after_midnight_from_fridays_late_shift(client):
    """Platform choice (data): Gus' online desk is open Friday 18:00-02:00, so Saturday starts at 00:00."""
    response = client.get(
        "/api/organizations/gus_notary/availability",
        params={
            "service_id": "gus_notary_notarization",
            "date": "2026-05-09",
            "location_id": "gus_notary_online",
        },
    )
    times = sorted({slot["time"] for slot in response.json()["slots"]})
    assert times[:6] == ["00:00", "00:20", "00:40", "01:00", "01:20", "01:40"]
    assert "02:00" not in times
    assert "10:00" in times


def test_slots_carry_location_provider_zone_and_native_price(client):
    """Platform choice (native dialect): wall-clock date/time plus the location's IANA zone, major-unit
    price."""
    response = client.get(
        "/api/organizations/carolyns_dental/availability",
        params={
            "service_id": "carolyns_dental_cleaning",
            "date": DAY,
            "provider_id": "carolyns_dental_dr_reyes",
        },
    )
    first = response.json()["slots"][0]
    assert first.pop("offer_token").startswith("ofr_")
    assert first == {
        "location_id": "carolyns_dental_midtown",
        "location_name": "Carolyn's Dental Midtown",
        "time_zone": "America/New_York",
        "provider_id": "carolyns_dental_dr_reyes",
        "provider_name": "Dr. Carolyn Reyes",
        "provider_image_url": "https://images.bookwell.example/providers/carolyns_dental_dr_reyes.jpg",
        "service_id": "carolyns_dental_cleaning",
        "date": DAY,
        "time": "09:00",
        "end_date": DAY,
        "end_time": "09:45",
        "duration_minutes": 45,
        "price": {"kind": "fixed", "amount": "120.00", "currency": "USD"},
    }
    assert response.json()["slots"][-1]["time"] == "16:15"  # 16:15 + 45 min = 17:00 closing


def test_a_booking_of_another_service_removes_overlapping_slots_of_that_provider(client):
    """Platform choice (availability): no overlap with any active appointment of that provider (any
    service)."""
    checkup = booking(service_id="carolyns_dental_checkup", time="10:00")
    assert create(client, "carolyns_dental", checkup).status_code == 201
    response = client.get(
        "/api/organizations/carolyns_dental/availability",
        params={
            "service_id": "carolyns_dental_cleaning",
            "date": DAY,
            "provider_id": "carolyns_dental_dr_reyes",
        },
    )
    times = [slot["time"] for slot in response.json()["slots"]]
    assert "09:15" in times  # ends 10:00, touching is not overlapping
    for blocked in ("09:30", "09:45", "10:00", "10:15"):
        assert blocked not in times
    assert "10:30" in times


def test_slots_in_the_past_of_the_platform_clock_are_not_offered(client):
    """Platform choice (availability): not in the past by the platform clock."""
    client.post("/_testing/clock", json={"now": "2026-05-05T14:20:00Z"})  # 10:20 in New York
    response = client.get(
        "/api/organizations/carolyns_dental/availability",
        params={
            "service_id": "carolyns_dental_cleaning",
            "date": DAY,
            "provider_id": "carolyns_dental_dr_reyes",
        },
    )
    assert response.json()["slots"][0]["time"] == "10:30"


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"service_id": "nope", "date": DAY}, "service_not_found"),
        ({"service_id": "gus_notary_notarization", "date": DAY}, "service_not_found"),
        (
            {"service_id": "carolyns_dental_cleaning", "date": DAY, "location_id": "nope"},
            "location_not_found",
        ),
        (
            {"service_id": "carolyns_dental_cleaning", "date": DAY, "provider_id": "nope"},
            "provider_not_found",
        ),
        ({"service_id": "carolyns_dental_cleaning", "date": "2026-02-30"}, "invalid_request"),
        ({"service_id": "carolyns_dental_cleaning", "date": "May 5"}, "invalid_request"),
    ],
)
def test_availability_refuses_unknown_ids_and_bad_dates_with_a_code(client, params, code):
    """Platform choice (errors): unknown ids → 404 with a code; malformed input → 400, never 500."""
    response = client.get("/api/organizations/carolyns_dental/availability", params=params)
    assert response.json()["code"] == code
    assert response.status_code == (400 if code == "invalid_request" else 404)


@given(
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2037, 12, 31)),
    st.sampled_from(["America/New_York", "Europe/Berlin", "Europe/London", "Australia/Lord_Howe", "UTC"]),
)
def test_wall_clock_to_instant_round_trips_or_reports_a_missing_time(local, tz_name):
    """Platform choice (DST): every local time maps to its first instant and back, or is reported as
    nonexistent."""
    tz = zone(tz_name)
    instant = to_instant(local, tz)
    if instant is None:
        assert local.replace(tzinfo=tz).astimezone(UTC).astimezone(tz).replace(tzinfo=None) != local
    else:
        assert instant.astimezone(tz).replace(tzinfo=None) == local
        assert instant == local.replace(tzinfo=tz, fold=0).astimezone(UTC)


def test_openapi_docs_are_served(client):
    """Platform choice: OpenAPI docs at /docs."""
    assert client.get("/docs").status_code == 200
    assert client.get("/openapi.json").json()["info"]["title"] == "Bookwell"


def test_openings_are_remembered_per_exact_input_and_handed_out_as_fresh_lists():
    """Platform choice: memoized openings are exact (every input is the key) and callers cannot spoil them."""
    tz = zone("America/New_York")
    monday = date(2026, 5, 4)
    hours: list[dict[str, str | int]] = [{"weekday": 1, "open": "09:00", "close": "10:00"}]
    first = local_openings(hours, tz, monday, 30, 30)
    first.clear()
    assert [o.time for o in local_openings(hours, tz, monday, 30, 30)] == ["09:00", "09:30"]
    hours[0]["close"] = "10:30"  # an edited row: a different key, computed afresh
    assert [o.time for o in local_openings(hours, tz, monday, 30, 30)] == ["09:00", "09:30", "10:00"]
    assert [o.time for o in local_openings(hours, tz, monday, 15, 30)][:3] == ["09:00", "09:15", "09:30"]
    assert [o.end_time for o in local_openings(hours, tz, monday, 30, 60)] == ["10:00", "10:30"]
