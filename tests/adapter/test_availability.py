"""The availability.find answer: start order, pages that hold every slot once, display context once, size."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from osbp.adapter.availability import Page, page
from osbp.adapter.native import (
    NativeHours,
    NativeLocation,
    NativeOrganization,
    NativePrice,
    NativeProvider,
    NativeSlot,
)
from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import FIND_LIMIT_MAX, Slot
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from tests.support.reference import DAY, Platform, make_adapter
from tests.support.stdio import StdioServer

NOTARY = "gus_notary"
NOTARIZATION = "gus_notary_notarization"
#: What the spec's availability.find example shows on every slot: create-ready ids, both time forms and
#: the timezone, the price, and the display names.
CREATE_READY = ("id", "organization_id", "schedule_id", "provider_id", "service_id")
TIMES_AND_PRICE = ("starts_at", "ends_at", "starts_at_local", "ends_at_local", "schedule_timezone", "price")
REQUIRED = (*CREATE_READY, *TIMES_AND_PRICE, "schedule_name", "provider_name")
NEXT_START = re.compile(r'earliest_start="([^"]+)"')
ZONE = "America/New_York"


def _location(location_id: str) -> NativeLocation:
    hours = [NativeHours(weekday=1, open="09:00", close="17:00")]
    return NativeLocation(id=location_id, name=location_id, kind="office", time_zone=ZONE, hours=hours)


def _provider(provider_id: str) -> NativeProvider:
    return NativeProvider(
        id=provider_id, name=provider_id, image_url=f"https://img.example/{provider_id}.jpg"
    )


#: The organization the native slots below belong to: two schedules, three providers.
ORGANIZATION = NativeOrganization(
    id="org",
    name="Org",
    time_zone=ZONE,
    currency="USD",
    country="US",
    locations=[_location("s1"), _location("s2")],
    providers=[_provider("p1"), _provider("a"), _provider("b")],
)


def _slot(start: str, provider: str = "p1", schedule: str = "s1") -> NativeSlot:
    return NativeSlot(
        location_id=schedule,
        location_name=schedule,
        time_zone=ZONE,
        provider_id=provider,
        provider_name=provider,
        provider_image_url=f"https://img.example/{provider}.jpg",
        service_id="svc",
        date="2030-05-06",
        time=start,
        end_date="2030-05-06",
        end_time=start,
        duration_minutes=0,
        price=NativePrice(kind="fixed", amount="15.00", currency="USD"),
    )


def _page(slots: list[NativeSlot], earliest_start: str | None, limit: int | None) -> Page:
    return page(slots, ORGANIZATION, earliest_start=earliest_start, limit=limit)


def _pages(slots: list[NativeSlot], limit: int | None) -> list[list[Slot]]:
    pages, start = [], None
    while True:
        found = _page(slots, start, limit)
        pages.append(found.slots)
        if found.next_start is None:
            return pages
        start = found.next_start


@given(
    starts=st.lists(
        st.tuples(st.integers(8, 19), st.sampled_from([0, 20, 40]), st.sampled_from("ab")), max_size=60
    ),
    limit=st.integers(1, 30) | st.none(),
)
def test_paging_by_earliest_start_returns_every_slot_exactly_once_in_start_order(
    starts: list[tuple[int, int, str]], limit: int | None
) -> None:
    """Platform choice: a page ends between two start times, so the next resumes with no loss or repeat."""
    slots = [_slot(f"{hour:02d}:{minute:02d}", provider) for hour, minute, provider in dict.fromkeys(starts)]
    pages = _pages(slots, limit)
    seen = [slot.id for shown in pages for slot in shown]
    assert sorted(seen) == sorted(f"s1:{slot.provider_id}:svc:2030-05-06T{slot.time}:00" for slot in slots)
    assert len(seen) == len(set(seen))
    flat = [slot.starts_at_local for shown in pages for slot in shown]
    assert flat == sorted(flat)
    if limit is None:
        assert len(pages) == 1  # no limit: the whole day in one answer
    else:
        assert all(len(shown) <= limit + 1 for shown in pages)  # one more at most: two providers, one start


def test_a_page_never_splits_the_slots_of_one_start_time() -> None:
    """Platform choice: a page keeps every slot sharing its last start time, so no slot is skipped."""
    slots = [_slot("09:00", "a"), _slot("09:00", "b"), _slot("09:20", "a"), _slot("09:20", "b")]
    first = _page(slots, None, 1)
    assert [slot.provider_id for slot in first.slots] == ["a", "b"]
    assert (first.total, first.next_start) == (4, "2030-05-06T09:20:00")


def test_earliest_start_is_inclusive_as_the_mandates_field_of_that_name() -> None:
    """OSBP spec, BookingMandate (earliest_start compared against starts_at_local): at or after it."""
    slots = [_slot("09:00"), _slot("09:20"), _slot("09:40")]
    found = _page(slots, "2030-05-06T09:20:00", None)
    assert [slot.starts_at_local for slot in found.slots] == ["2030-05-06T09:20:00", "2030-05-06T09:40:00"]
    assert (found.total, found.next_start, found.notice) == (2, None, None)
    later = _page(slots, "2030-05-06T09:20:00.5", None)
    assert [slot.starts_at_local for slot in later.slots] == ["2030-05-06T09:40:00"]


def test_a_partial_page_says_how_many_slots_there_are_and_how_to_get_the_next() -> None:
    """OSBP spec, Result Envelope (osbp_runtime describes how the answer was produced): later slots are
    named as not shown, never as taken, with the exact earliest_start of the next page."""
    slots = [_slot(f"{hour:02d}:00") for hour in range(8, 20)]
    notice = _page(slots, None, 5).notice
    assert notice is not None
    assert notice.idempotency is None
    assert notice.message is not None
    assert "first 5 of 12 open slots" in notice.message
    assert "The 7 later slots, from 2030-05-06T13:00:00 merchant-local, are not shown here, not taken" in (
        notice.message
    )
    assert NEXT_START.findall(notice.message) == ["2030-05-06T13:00:00"]


def test_display_context_appears_once_per_schedule_and_provider() -> None:
    """Platform choice (OSBP spec, Time Discipline: hours are display context only): repeated context once."""
    slots = [_slot("09:00", "a"), _slot("09:00", "b"), _slot("09:20", "a", "s2"), _slot("09:40", "b", "s2")]
    shown = [slot.to_wire() for slot in _page(slots, None, None).slots]
    assert all(slot["organization_name"] == "Org" for slot in shown)
    assert ["schedule_hours" in slot for slot in shown] == [True, False, True, False]
    assert ["provider_image_url" in slot for slot in shown] == [True, True, False, False]
    assert all(slot["schedule_timezone"] == "America/New_York" for slot in shown)


# --- Through the MCP server, against the real platform -------------------------------------------------


@pytest.fixture
async def notary(platform: Platform, tmp_path: Path, clock: FixedClock) -> AsyncIterator[Client]:
    """An in-memory MCP client of a server over the reference adapter for Gus' Notary."""
    adapter: OsbpCore = make_adapter(platform.base_url, tmp_path / "state", clock, organization_id=NOTARY)
    audit = AuditLog(tmp_path / "audit.jsonl")
    counter = itertools.count(1)
    server = create_server(adapter, audit, clock=clock, new_event_id=lambda: f"aud_{next(counter):04d}")
    async with Client(server) as client:
        yield client
    audit.close()
    await adapter.aclose()


async def _find(client: Client, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool(
        "osbp_availability_find", {"service_id": NOTARIZATION, "date": DAY, **arguments}
    )
    text = result.content[0].text  # type: ignore[union-attr]  # the OSBP envelope is one text block
    envelope: dict[str, Any] = json.loads(text)
    return text, envelope


@pytest.mark.anyio
async def test_the_busiest_seeded_day_comes_whole_without_a_limit_with_every_required_field(
    notary: Client,
) -> None:
    """OSBP spec, availability.find (the value is the day's slots, each create-ready): no limit, no page
    (Gus' notarization, both schedules: the seed's busiest day, 96 slots, about 60 KB)."""
    text, envelope = await _find(notary)
    assert envelope["ok"] is True
    assert "osbp_runtime" not in envelope
    assert len(envelope["value"]) == 96
    assert len(text.encode("utf-8")) <= 64 * 1024
    for slot in envelope["value"]:
        assert [key for key in REQUIRED if key not in slot] == []
        assert slot["price"]["amount_minor"] == 1500
        assert slot["starts_at"].endswith("Z")
    _, page = await _find(notary, limit=12)
    assert len(page["value"]) == 12
    assert "96 open slots" in page["osbp_runtime"]["message"]


@pytest.mark.anyio
async def test_display_context_is_on_the_first_slot_of_each_schedule_only(notary: Client) -> None:
    """Platform choice: hours once per schedule, image once per provider; organization name, address and
    coordinates on every in-person slot (their absence says online)."""
    _, envelope = await _find(notary, limit=FIND_LIMIT_MAX)
    slots = envelope["value"]
    assert all(slot["organization_name"] == "Gus' Notary" for slot in slots)
    with_hours = [slot["schedule_id"] for slot in slots if "schedule_hours" in slot]
    assert sorted(with_hours) == ["gus_notary_office", "gus_notary_online"]
    assert sum("provider_image_url" in slot for slot in slots) == 2
    office = [slot for slot in slots if slot["schedule_id"] == "gus_notary_office"]
    assert office
    assert all("schedule_address" in slot and "schedule_latitude" in slot for slot in office)


@pytest.mark.anyio
async def test_following_each_partial_pages_notice_returns_the_whole_day_once(notary: Client) -> None:
    """Platform choice: the pages an agent asks for together are exactly the whole-day answer, in order."""
    _, whole = await _find(notary)
    seen: list[str] = []
    arguments: dict[str, Any] = {}
    for _ in range(20):
        _, envelope = await _find(notary, limit=12, **arguments)
        seen += [slot["id"] for slot in envelope["value"]]
        if "osbp_runtime" not in envelope:
            break
        (start,) = NEXT_START.findall(envelope["osbp_runtime"]["message"])
        arguments = {"earliest_start": start}
    assert len(seen) == len(set(seen)) == 96
    assert seen == [slot["id"] for slot in whole["value"]]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"earliest_start": "09:00"}, "invalid_input"),
        ({"earliest_start": "2026-05-05T09:00:00-04:00"}, "invalid_input"),
        ({"limit": 0}, "invalid_input"),
        ({"limit": FIND_LIMIT_MAX + 1}, "invalid_input"),
        ({"limit": "12"}, "invalid_input"),
    ],
)
async def test_a_malformed_earliest_start_or_limit_is_rejected_with_invalid_input(
    notary: Client, arguments: dict[str, Any], code: str
) -> None:
    """OSBP spec, Time Discipline (wall-clock, no offset); platform choice: bounded, integer page size."""
    _, envelope = await _find(notary, **arguments)
    assert (envelope["ok"], envelope["problem"]["code"]) == (False, code)


# --- A v0.1.0 agent: the real stdio server, no extension inputs ------------------------------------------

#: Gus' Notary's busy Monday: notarization over both schedules, two providers, every 20 minutes.
BUSY_MONDAY = "2026-05-11"


def test_a_v010_call_without_limit_gets_every_slot_the_platform_offers_that_day(
    platform: Platform, tmp_path: Path
) -> None:
    """OSBP spec, availability.find: the value is the day's slots; a v0.1.0 agent reads only that array, so
    no slot the platform offers may be missing from it (the last of the day included)."""
    native = platform.client.get(
        f"/api/organizations/{NOTARY}/availability", params={"service_id": NOTARIZATION, "date": BUSY_MONDAY}
    )
    assert native.status_code == 200
    slots = native.json()["slots"]

    def slot_id(slot: dict[str, Any]) -> str:
        where = f"{slot['location_id']}:{slot['provider_id']}:{slot['service_id']}"
        return f"{where}:{slot['date']}T{slot['time']}:00"

    offered = [slot_id(slot) for slot in slots]
    last = slot_id(max(slots, key=lambda slot: (slot["date"], slot["time"])))
    env = {
        "OSBP_PLATFORM_BASE_URL": platform.base_url,
        "OSBP_ORGANIZATION_ID": NOTARY,
        "OSBP_STATE_PATH": str(tmp_path / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit" / "events.jsonl"),
        "OSBP_NOW": "2026-05-04T12:00:00Z",
    }
    with StdioServer(env) as server:
        envelope = server.call("osbp_availability_find", {"service_id": NOTARIZATION, "date": BUSY_MONDAY})
    assert envelope is not None
    assert envelope["ok"] is True
    found = [slot["id"] for slot in envelope["value"]]
    assert len(found) == len(offered) == 96
    assert sorted(found) == sorted(offered)
    assert last in found
    assert "osbp_runtime" not in envelope
