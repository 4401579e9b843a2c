"""The DST dates the battery grades: the zone's real transitions, from the tzdata package."""

from __future__ import annotations

import datetime as dt

from osbp.conformance.time_checks import dst_transitions


def test_the_next_two_transitions_of_new_york_are_the_november_and_march_changes():
    """OSBP spec, Time Discipline (DST-correct conversion): the battery grades both sides of real
    transitions, found from the zone's rules, not a fixed calendar."""
    assert dst_transitions("America/New_York", dt.date(2029, 11, 1)) == [
        dt.date(2029, 11, 4),
        dt.date(2030, 3, 10),
    ]


def test_a_southern_zone_changes_in_the_other_months():
    """OSBP spec, Time Discipline: the transitions come from the zone named, wherever it is."""
    assert dst_transitions("Australia/Sydney", dt.date(2030, 1, 1)) == [
        dt.date(2030, 4, 7),
        dt.date(2030, 10, 6),
    ]


def test_a_zone_without_dst_has_no_transition_to_grade():
    """Platform choice (docs/conformance.md): time.dst_rules is SKIP for a zone without DST."""
    assert dst_transitions("Asia/Tokyo", dt.date(2030, 1, 1)) == []
