"""The DST-day and paging rules of the all-day checks, on slot lists built by hand."""

from __future__ import annotations

from typing import Any

from osbp.conformance.all_day_checks import _day_problems, _named_problems, _paging_problems
from osbp.conformance.fixtures import OracleSlot

ZONE = "America/New_York"


def _slot(local: str, instant: str, provider: str = "ada") -> dict[str, Any]:
    return {
        "id": f"{provider}:{local}",
        "starts_at_local": local,
        "starts_at": instant,
        "provider_id": provider,
    }


FOLD = OracleSlot(
    schedule_id="all_day",
    service_id="svc",
    provider_id="ada",
    starts_at_local="2030-11-03T01:30:00",
    starts_at="2030-11-03T05:30:00Z",
)


def test_a_fold_slot_at_the_oracles_instant_passes_and_at_the_later_one_fails():
    """OSBP spec, Time Discipline: the oracle names which occurrence of a repeated time is offered."""
    assert _named_problems(FOLD, [_slot("2030-11-03T01:30:00", "2030-11-03T05:30:00Z")]) == []
    wrong = _named_problems(FOLD, [_slot("2030-11-03T01:30:00", "2030-11-03T06:30:00Z")])
    assert wrong == ["2030-11-03T01:30:00: starts_at '2030-11-03T06:30:00Z', expected 2030-11-03T05:30:00Z"]
    assert _named_problems(FOLD, []) == ["0 slots start at 2030-11-03T01:30:00 with ada, expected 1"]


def test_a_skipped_wall_clock_time_offered_is_a_problem_whatever_its_instant():
    """OSBP spec, Time Discipline: 02:30 does not exist on 2030-03-10 in New York."""
    problems = _day_problems([_slot("2030-03-10T02:30:00", "2030-03-10T07:30:00Z")], ZONE)
    assert problems == ["2030-03-10T02:30:00 does not exist in America/New_York but is offered"]


def test_an_hour_late_instant_after_the_gap_and_a_start_offered_twice_are_problems():
    """OSBP spec, Time Discipline; booking.create takes the wall-clock, so one start may come only once."""
    slots = [
        _slot("2030-03-10T03:00:00", "2030-03-10T08:00:00Z"),
        _slot("2030-11-03T01:30:00", "2030-11-03T05:30:00Z"),
        _slot("2030-11-03T01:30:00", "2030-11-03T06:30:00Z"),
    ]
    assert _day_problems(slots, ZONE) == [
        "2030-03-10T03:00:00: starts_at '2030-03-10T08:00:00Z' is not that time",
        "2030-11-03T01:30:00 is offered twice with ada",
    ]


def _day(starts: int) -> list[dict[str, Any]]:
    return [
        _slot(f"2030-05-02T{hour:02d}:00:00", f"2030-05-02T{hour + 4:02d}:00:00Z", provider)
        for hour in range(starts)
        for provider in ("ada", "grace")
    ]


def test_pages_that_hold_every_slot_once_pass():
    """Platform choice (availability.find paging): pages end between two start times."""
    day = _day(6)
    assert _paging_problems([day[:4], day[4:8], day[8:]], day, 3) == []


def test_a_lost_start_a_repeated_slot_and_a_split_start_are_each_found():
    """Platform choice (availability.find paging): across pages every slot comes exactly once."""
    day = _day(6)
    lost = _paging_problems([day[:4], day[6:]], day, 3)
    assert lost == [
        "2 slots of the day are on no page, first ('2030-05-02T02:00:00', 'ada', '2030-05-02T06:00:00Z')"
    ]
    split = _paging_problems([day[:3], day[3:]], day, 3)
    assert split == ["start 2030-05-02T01:00:00 is split across pages"]
    repeated = _paging_problems([day[:4], day[2:]], day, 3)
    assert repeated[0].startswith("2 slots come on two pages")
