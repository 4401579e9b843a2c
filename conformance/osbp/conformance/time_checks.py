"""Instants against the zone's real rules, on dates both sides of its DST transitions.

The fixture slot alone cannot tell a DST-correct server from one that applies a fixed UTC offset: both
agree on that date. So the battery asks availability.find for the fixed-price service on the nearest dates
with slots before and after each of the zone's next two transitions around the slot date (computed from
the `tzdata` package, never the host's zone files) and checks every slot's instants against the
wall-clock converted through the zone. A zone without transitions there is SKIP.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from osbp.conformance.grading import expect, summarize
from osbp.conformance.probe import Probe
from osbp.conformance.wallclock import parse_instant, parse_wall_clock, wall_clock_to_instants, zone

__all__ = ["dst_transitions", "grade_dst"]

#: How many days each side of a transition the battery looks for a date with slots.
_SEARCH_DAYS = 7
#: How many transitions are graded (one of each direction in a zone with DST).
_TRANSITIONS = 2


def _offset(timezone: str, day: dt.date) -> dt.timedelta | None:
    return dt.datetime.combine(day, dt.time(12)).replace(tzinfo=zone(timezone)).utcoffset()


def dst_transitions(timezone: str, start: dt.date, *, limit: int = _TRANSITIONS) -> list[dt.date]:
    """The first `limit` days on or after `start` whose noon offset differs from the day before's."""
    found: list[dt.date] = []
    day = start
    previous = _offset(timezone, day - dt.timedelta(days=1))
    for _ in range(800):
        offset = _offset(timezone, day)
        if offset != previous:
            found.append(day)
            if len(found) == limit:
                break
        previous, day = offset, day + dt.timedelta(days=1)
    return found


async def _slots_near(probe: Probe, days: list[dt.date]) -> tuple[dt.date | None, list[Any]]:
    fixtures = probe.fixtures
    for day in days:
        exchange = await probe.wire.call(
            "osbp_availability_find",
            {
                "service_id": fixtures.services.fixed_usd.id,
                "schedule_id": fixtures.schedule.id,
                "date": day.isoformat(),
                "provider_id": fixtures.providers.in_scope,
            },
        )
        if isinstance(exchange.value, list) and exchange.value:
            return day, exchange.value
    return None, []


def _slot_problems(slot: Any, timezone: str, day: dt.date) -> tuple[int, list[str]]:
    if not isinstance(slot, dict):
        return 0, [f"{day}: a slot is not an object"]
    count, problems = 0, []
    for instant_key, local_key in (("starts_at", "starts_at_local"), ("ends_at", "ends_at_local")):
        local = parse_wall_clock(slot.get(local_key))
        if local is None:
            problems.append(f"{day}: slot {slot.get('id')!r} has no {local_key}")
            continue
        count += 1
        wanted = wall_clock_to_instants(local, timezone)
        if parse_instant(slot.get(instant_key)) not in wanted:
            expected = " or ".join(sorted(w.strftime("%Y-%m-%dT%H:%M:%SZ") for w in wanted))
            problems.append(
                f"{day}: {instant_key} {slot.get(instant_key)!r} for {slot.get(local_key)} {timezone}, "
                f"expected {expected}"
            )
    return count, problems


async def grade_dst(probe: Probe, *, today: dt.date) -> None:
    """Grade time.dst_rules; `today` bounds the search to dates a platform can still offer."""
    fixtures = probe.fixtures
    timezone = fixtures.timezone
    start = max(today + dt.timedelta(days=1), fixtures.slot.date - dt.timedelta(days=183))
    try:
        transitions = dst_transitions(timezone, start)
    except ValueError as exc:
        probe.grader.failed("time.dst_rules", str(exc))
        return
    if not transitions:
        probe.grader.skipped("time.dst_rules", f"{timezone} has no DST transition after {start}")
        return
    with probe.grader.check("time.dst_rules"):
        graded, problems = 0, []
        for transition in transitions:
            before = [transition - dt.timedelta(days=n) for n in range(1, _SEARCH_DAYS + 1)]
            after = [transition + dt.timedelta(days=n) for n in range(_SEARCH_DAYS)]
            for side, days in (("before", before), ("after", after)):
                day, slots = await _slots_near(probe, days)
                if day is None:
                    problems.append(f"no slots within {_SEARCH_DAYS} days {side} the {transition} transition")
                    continue
                for slot in slots:
                    count, found = _slot_problems(slot, timezone, day)
                    graded, problems = graded + count, problems + found
        expect(not problems, summarize(problems))
        expect(graded > 0, "no slot instants to grade")
