"""The oracle's named slots at a DST gap and fold, a booking of the fold slot, and availability paging.

The fixture file (format 2) names slots with their exact instants (`slots.dst_gap*`, `slots.dst_fold*`,
on a 24-hour schedule): on each such day the offered slots must include every named one at exactly its
instant, offer no wall-clock time the zone skips, give every other start one of its wall-clock's
instants, and offer each wall-clock start once per provider (booking.create takes the wall-clock, so two
slots with one start could not be told apart). The fold slot is then booked: booking.status must report
the oracle's instants. Paging (the `limit` / `earliest_start` extension of availability.find) walks the
all-day schedule's full day page by page and compares the pages with the unpaged day and the oracle's
slot count.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from osbp.conformance.fixtures import OracleSlot
from osbp.conformance.flows import book, challenge
from osbp.conformance.grading import CheckFailed, expect, summarize
from osbp.conformance.probe import Probe
from osbp.conformance.summary_checks import date_forms, summary_text
from osbp.conformance.wallclock import (
    clock_forms,
    format_wall_clock,
    parse_instant,
    parse_wall_clock,
    wall_clock_to_instants,
    zone,
)
from osbp.conformance.wire import Exchange

__all__ = ["ALL_DAY_CHECKS", "grade_all_day"]

#: Every check this module grades, in report order.
ALL_DAY_CHECKS = ("time.dst_gap_slots", "time.dst_fold_slots", "time.dst_fold_booking", "availability.paging")
FIND = "osbp_availability_find"
#: Slots per page: odd, so that page boundaries fall between two providers' slots sharing a start.
PAGE_LIMIT = 25
#: The fixed form a partial page's notice names the next page by (this project's extension).
_NEXT_PAGE = re.compile(r'earliest_start="([^"]+)"')


def _key(slot: dict[str, Any]) -> tuple[str, str, str]:
    return (str(slot.get("starts_at_local")), str(slot.get("provider_id")), str(slot.get("starts_at")))


async def _day(probe: Probe, slot: OracleSlot, **extra: Any) -> Exchange:
    return await probe.wire.call(
        FIND,
        {
            "service_id": slot.service_id,
            "schedule_id": slot.schedule_id,
            "date": slot.starts_at_local[:10],
            **extra,
        },
    )


def _named_problems(named: OracleSlot, slots: list[Any]) -> list[str]:
    """Why the oracle's `named` slot is not offered at exactly its instants."""
    same = [
        slot
        for slot in slots
        if isinstance(slot, dict)
        and slot.get("provider_id") == named.provider_id
        and parse_wall_clock(slot.get("starts_at_local")) == named.local_start
    ]
    if len(same) != 1:
        return [f"{len(same)} slots start at {named.starts_at_local} with {named.provider_id}, expected 1"]
    slot, problems = same[0], []
    for key, wanted in (("starts_at", named.starts_at), ("ends_at", named.ends_at)):
        if wanted is not None and parse_instant(slot.get(key)) != parse_instant(wanted):
            problems.append(f"{named.starts_at_local}: {key} {slot.get(key)!r}, expected {wanted}")
    if named.ends_at_local is not None and parse_wall_clock(slot.get("ends_at_local")) != parse_wall_clock(
        named.ends_at_local
    ):
        got = slot.get("ends_at_local")
        problems.append(f"{named.starts_at_local}: ends_at_local {got!r}, expected {named.ends_at_local}")
    return problems


def _day_problems(slots: list[Any], timezone: str) -> list[str]:
    """Starts the zone skips, instants that are not their wall-clock's, and one start offered twice."""
    tz = zone(timezone)
    problems, seen = [], set()
    for slot in slots:
        if not isinstance(slot, dict):
            problems.append("a slot is not an object")
            continue
        local = parse_wall_clock(slot.get("starts_at_local"))
        if local is None:
            problems.append(f"slot {slot.get('id')!r}: starts_at_local {slot.get('starts_at_local')!r}")
            continue
        if local.replace(tzinfo=tz).astimezone(dt.UTC).astimezone(tz).replace(tzinfo=None) != local:
            problems.append(f"{format_wall_clock(local)} does not exist in {timezone} but is offered")
        elif parse_instant(slot.get("starts_at")) not in wall_clock_to_instants(local, timezone):
            problems.append(
                f"{format_wall_clock(local)}: starts_at {slot.get('starts_at')!r} is not that time"
            )
        key = (local, slot.get("provider_id"))
        if key in seen:
            problems.append(f"{format_wall_clock(local)} is offered twice with {slot.get('provider_id')}")
        seen.add(key)
    return problems


async def _grade_named(probe: Probe, check_id: str, prefix: str) -> None:
    named = {name: slot for name, slot in probe.fixtures.slots.items() if name.startswith(prefix)}
    if not named:
        probe.grader.skipped(check_id, f"the fixture file names no {prefix}* slot")
        return
    with probe.grader.check(check_id, ", ".join(f"{n} {s.starts_at}" for n, s in named.items())):
        problems: list[str] = []
        days: dict[tuple[str, str, str], list[Any]] = {}
        for name, slot in named.items():
            day = (slot.schedule_id, slot.service_id, slot.starts_at_local[:10])
            if day not in days:
                exchange = await _day(probe, slot)
                if not isinstance(exchange.value, list):
                    raise CheckFailed(f"availability.find {day}: {exchange.describe()}")
                days[day] = exchange.value
                timezone = probe.fixtures.zone_of(slot.schedule_id) or ""
                problems += [f"{day[2]}: {p}" for p in _day_problems(days[day], timezone)]
            problems += [f"{name}: {p}" for p in _named_problems(slot, days[day])]
        expect(not problems, summarize(problems))


def _fold_payload(probe: Probe, slot: OracleSlot) -> dict[str, Any]:
    day = slot.local_start.date()
    mandate = probe.payloads.mandate(
        slot.service_id,
        schedule_ids=[slot.schedule_id],
        provider_ids=[slot.provider_id],
        earliest_start=format_wall_clock(dt.datetime.combine(day, dt.time())),
        latest_end=format_wall_clock(dt.datetime.combine(day + dt.timedelta(days=1), dt.time())),
    )
    return probe.payloads.create(
        slot.service_id,
        mandate=mandate,
        schedule_id=slot.schedule_id,
        provider_id=slot.provider_id,
        date=day.isoformat(),
        time=slot.starts_at_local[11:16],
    )


async def _grade_fold_booking(probe: Probe) -> None:
    slot = probe.fixtures.slots.get("dst_fold")
    if slot is None:
        probe.grader.skipped("time.dst_fold_booking", "the fixture file names no dst_fold slot")
        return
    with probe.grader.check("time.dst_fold_booking", f"{slot.starts_at_local} -> {slot.starts_at}"):
        payload = _fold_payload(probe, slot)
        first, _ = await challenge(probe, payload)
        expect(first.code == "requires_user_confirmation", f"expected a challenge, got {first.describe()}")
        summary = summary_text(first.message)
        start = slot.local_start
        expect(
            any(form in summary for form in date_forms(start.date()))
            and any(form in summary for form in clock_forms(start.time())),
            f"the summary does not state {slot.starts_at_local}: {summary[:300]!r}",
        )
        booked = await book(probe, payload)
        receipt = booked.value
        expect(
            isinstance(receipt, dict) and bool(receipt.get("booking_id")), f"no receipt: {booked.describe()}"
        )
        status = await probe.wire.call("osbp_booking_status", {"booking_id": receipt["booking_id"]})
        value = status.value
        expect(isinstance(value, dict), f"booking.status: {status.describe()}")
        problems = [
            f"{key} {value.get(key)!r}, expected {wanted}"
            for key, wanted in (("starts_at", slot.starts_at), ("ends_at", slot.ends_at))
            if wanted is not None and parse_instant(value.get(key)) != parse_instant(wanted)
        ]
        if parse_wall_clock(value.get("starts_at_local")) != start:
            problems.append(
                f"starts_at_local {value.get('starts_at_local')!r}, expected {slot.starts_at_local}"
            )
        expect(not problems, "booking.status of the fold slot: " + "; ".join(problems))


async def _offers_limit(probe: Probe) -> bool:
    for tool in await probe.wire.list_tools():
        if tool.name == FIND:
            properties = (tool.input_schema or {}).get("properties") or {}
            return "limit" in properties and "earliest_start" in properties
    return False


def _paging_problems(pages: list[list[Any]], whole: list[Any], limit: int) -> list[str]:
    problems = []
    paged = [_key(slot) for page in pages for slot in page if isinstance(slot, dict)]
    wanted = [_key(slot) for slot in whole if isinstance(slot, dict)]
    lost = sorted(set(wanted) - set(paged))
    if lost:
        problems.append(f"{len(lost)} slots of the day are on no page, first {lost[0]}")
    extra = sorted(set(paged) - set(wanted))
    if extra:
        problems.append(f"{len(extra)} paged slots are not in the day's answer, first {extra[0]}")
    repeated = sorted({key for key in paged if paged.count(key) > 1})
    if repeated:
        problems.append(f"{len(repeated)} slots come on two pages, first {repeated[0]}")
    starts = [{str(slot.get("starts_at_local")) for slot in page if isinstance(slot, dict)} for page in pages]
    split = sorted({start for i, a in enumerate(starts) for b in starts[i + 1 :] for start in a & b})
    if split:
        problems.append(f"start {split[0]} is split across pages")
    for index, page in enumerate(pages[:-1]):
        if not page or len(page) < limit:
            problems.append(
                f"page {index + 1} holds {len(page)} slots, fewer than limit {limit}, yet has a next"
            )
    return problems


async def _grade_paging(probe: Probe) -> None:
    all_day, check_id = probe.fixtures.all_day, "availability.paging"
    if all_day is None:
        probe.grader.skipped(check_id, "the fixture file names no all_day schedule")
        return
    if not await _offers_limit(probe):
        probe.grader.skipped(check_id, "availability.find offers no limit/earliest_start (paging extension)")
        return
    day = all_day.full_day.date if all_day.full_day is not None else probe.fixtures.slot.date
    with probe.grader.check(check_id):
        whole_exchange = await probe.wire.call(
            FIND, {"service_id": all_day.service, "schedule_id": all_day.id, "date": day.isoformat()}
        )
        whole = whole_exchange.value
        expect(isinstance(whole, list), f"availability.find {day}: {whole_exchange.describe()}")
        if all_day.full_day is not None:
            expect(
                len(whole) == all_day.full_day.slot_count,
                f"{day}: {len(whole)} slots, expected {all_day.full_day.slot_count}",
            )
        expect(len(whole) > PAGE_LIMIT, f"{day}: {len(whole)} slots fit on one page of {PAGE_LIMIT}")
        pages = await _paged_day(probe, all_day.id, all_day.service, day)
        problems = _paging_problems(pages, whole, PAGE_LIMIT)
        expect(not problems, f"{len(pages)} pages of {PAGE_LIMIT}: " + summarize(problems))


async def _paged_day(probe: Probe, schedule_id: str, service_id: str, day: dt.date) -> list[list[Any]]:
    pages: list[list[Any]] = []
    cursor: str | None = None
    most = 1000 // PAGE_LIMIT + 2
    while len(pages) <= most:
        arguments: dict[str, Any] = {
            "service_id": service_id,
            "schedule_id": schedule_id,
            "date": day.isoformat(),
            "limit": PAGE_LIMIT,
        }
        if cursor is not None:
            arguments["earliest_start"] = cursor
        exchange = await probe.wire.call(FIND, arguments)
        expect(isinstance(exchange.value, list), f"page {len(pages) + 1}: {exchange.describe()}")
        pages.append(exchange.value)
        runtime = (exchange.envelope or {}).get("osbp_runtime")
        message = runtime.get("message") if isinstance(runtime, dict) else None
        found = _NEXT_PAGE.search(message) if isinstance(message, str) else None
        if found is None:
            return pages
        cursor = found.group(1)
    raise CheckFailed(f"more than {most} pages for one day: the next-page notice never ends")


async def grade_all_day(probe: Probe) -> None:
    """Grade the DST gap and fold slots, book the fold slot, and page through the all-day schedule."""
    await _grade_named(probe, "time.dst_gap_slots", "dst_gap")
    await _grade_named(probe, "time.dst_fold_slots", "dst_fold")
    await _grade_paging(probe)
    await _grade_fold_booking(probe)
