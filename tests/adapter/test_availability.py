"""availability.find against the real platform: the whole day without a limit, display context once,
pages that return the whole day once, malformed paging input refused (the rules are the core's,
:mod:`osbp.protocol.availability`; the reference adapter fetches and translates)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import FIND_LIMIT_MAX
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
