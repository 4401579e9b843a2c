"""The core around a plug-in port: a minimal adapter that implements only the port, and knows nothing of
paging, gets availability.find's protocol rules (date checks, order, earliest_start, limit, the notice,
display context once) from the core, through the real MCP server."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from osbp.protocol import (
    AvailabilityFindInput,
    Booking,
    BookingRequest,
    BookingStatusInput,
    Offer,
    OperatingHours,
    OsbpCore,
    PlatformAdapter,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
    Problem,
    ProblemCode,
    Service,
    ServiceDescribeInput,
    Slot,
    VerificationChallenge,
    VerificationSendInput,
    VerificationVerifyInput,
    problem,
)
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import Success
from osbp.server.app import create_server
from osbp.server.audit import AuditLog

DAY = "2030-05-06"
NOW = dt.datetime(2030, 5, 1, 12, tzinfo=dt.UTC)
STARTS = [f"{hour:02d}:{minute:02d}" for hour in range(9, 14) for minute in (0, 30)][:9]
NEXT_START = re.compile(r'earliest_start="([^"]+)"')


class TwoChairBarber:
    """A plug-in adapter written against the port alone: two chairs, a slot every 30 minutes from 09:00.

    It returns the whole day in reverse order and ignores ``earliest_start`` and ``limit``, as a port may:
    ordering, filtering and paging are the core's.
    """

    def __init__(self) -> None:
        self.finds = 0

    @property
    def platform(self) -> PlatformIdentity:
        """The static identity."""
        return PlatformIdentity(vendor="two-chair", api_version="1")

    @property
    def organization_id(self) -> str:
        """The one barber shop."""
        return "barber"

    async def describe_service(self, inp: ServiceDescribeInput) -> Service | Problem:
        """One service."""
        return Service(id="cut", name="Cut")

    async def find_availability(self, inp: AvailabilityFindInput) -> list[Slot] | Problem:
        """Every slot of the day, latest first (18: more than one page of 5)."""
        self.finds += 1
        return [self._slot(start, chair) for start in reversed(STARTS) for chair in ("ana", "bo")]

    async def explain_policy(self, inp: PolicyExplainInput) -> Policy | Problem:
        """No fees."""
        return Policy(service_id="cut", payment_requirement="none")

    async def send_verification(self, inp: VerificationSendInput) -> VerificationChallenge | Problem:
        """No verification here."""
        return problem("verification_not_supported", "The barber does not verify customers.")

    async def verify_code(self, inp: VerificationVerifyInput) -> VerificationChallenge | Problem:
        """No verification here."""
        return problem("pre_verification_not_supported", "Pass the code to booking.create.")

    async def get_booking(self, inp: BookingStatusInput) -> Booking | Problem:
        """No bookings are kept."""
        return problem(ProblemCode.BOOKING_NOT_FOUND)

    async def resolve_booking(self, request: BookingRequest) -> Offer | Problem:
        """Nothing is bookable (these tests read only)."""
        return Offer(None, None, None, not_offered=problem("service_not_found", "No such service."))

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """Never reached: nothing resolves."""
        return problem(ProblemCode.SLOT_TAKEN)

    async def aclose(self) -> None:
        """Nothing to release."""

    @staticmethod
    def _slot(start: str, chair: str) -> Slot:
        local = f"{DAY}T{start}:00"
        return Slot(
            id=f"shop:{chair}:cut:{local}",
            organization_id="barber",
            schedule_id="shop",
            schedule_hours=[OperatingHours(day=1, open="09:00", close="17:00")],
            schedule_timezone="Europe/Lisbon",
            provider_id=chair,
            provider_image_url=f"https://img.example/{chair}.jpg",
            service_id="cut",
            starts_at_local=local,
            ends_at_local=local,
        )


@pytest.fixture
def barber() -> TwoChairBarber:
    """The plug-in (tests read its call counter)."""
    return TwoChairBarber()


@pytest.fixture
async def client(barber: TwoChairBarber, tmp_path: Path) -> AsyncIterator[Client]:
    """An in-memory MCP client of the real server over the core around the plug-in."""
    clock = FixedClock(NOW)
    core = OsbpCore(barber, state=tmp_path / "state" / "osbp.sqlite3", clock=clock)
    audit = AuditLog(tmp_path / "audit" / "events.jsonl")
    async with Client(create_server(core, audit, clock=clock)) as connected:
        yield connected
    audit.close()
    await core.aclose()


async def _find(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("osbp_availability_find", {"date": DAY, **arguments})
    envelope: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return envelope


def _starts(envelope: dict[str, Any]) -> list[str]:
    return [slot["starts_at_local"][11:16] for slot in envelope["value"]]


def test_the_plug_in_implements_the_port_exported_from_osbp_protocol(barber: TwoChairBarber) -> None:
    """Platform choice (docs/adapter.md): the port is the plug-in contract ``osbp.protocol`` exports."""
    assert isinstance(barber, PlatformAdapter)


@pytest.mark.anyio
async def test_without_a_limit_the_plug_ins_whole_day_comes_in_start_order_with_no_notice(
    client: Client,
) -> None:
    """OSBP spec, availability.find (the value is the day's slots): every slot, ordered by the core,
    display context once."""
    envelope = await _find(client)
    assert envelope["ok"] is True
    assert "osbp_runtime" not in envelope
    assert _starts(envelope) == [start for start in STARTS for _ in range(2)]
    assert [slot["provider_id"] for slot in envelope["value"][:2]] == ["ana", "bo"]
    assert ["schedule_hours" in slot for slot in envelope["value"]] == [True] + [False] * 17
    assert sum("provider_image_url" in slot for slot in envelope["value"]) == 2


@pytest.mark.anyio
async def test_a_limit_gives_the_plug_in_a_page_ending_between_two_starts_with_the_exact_notice(
    client: Client,
) -> None:
    """OSBP spec, Result Envelope (osbp_runtime.message says how the answer was produced): the page of 5
    keeps the sixth slot, which shares the fifth's start, and names the next page's earliest_start."""
    envelope = await _find(client, limit=5)
    assert _starts(envelope) == ["09:00", "09:00", "09:30", "09:30", "10:00", "10:00"]
    assert envelope["osbp_runtime"] == {
        "message": "Partial list: the first 6 of 18 open slots. The 12 later slots, from "
        f"{DAY}T10:30:00 merchant-local, are not shown here, not taken: to see them, call "
        f'availability.find again with the same arguments plus earliest_start="{DAY}T10:30:00".'
    }


@pytest.mark.anyio
async def test_following_the_notices_returns_the_plug_ins_whole_day_once_in_order(client: Client) -> None:
    """Platform choice: the pages an agent asks for together are exactly the whole-day answer."""
    whole = [slot["id"] for slot in (await _find(client))["value"]]
    seen: list[str] = []
    arguments: dict[str, Any] = {"limit": 4}
    for _ in range(10):
        envelope = await _find(client, **arguments)
        seen += [slot["id"] for slot in envelope["value"]]
        if "osbp_runtime" not in envelope:
            break
        (arguments["earliest_start"],) = NEXT_START.findall(envelope["osbp_runtime"]["message"])
    assert seen == whole
    assert len(seen) == 18


@pytest.mark.anyio
async def test_earliest_start_is_applied_by_the_core_inclusively(client: Client) -> None:
    """OSBP spec, BookingMandate (earliest_start at or after, against starts_at_local)."""
    envelope = await _find(client, earliest_start=f"{DAY}T12:00:00")
    assert _starts(envelope) == ["12:00", "12:00", "12:30", "12:30", "13:00", "13:00"]
    assert "osbp_runtime" not in envelope


@pytest.mark.anyio
@pytest.mark.parametrize(
    "arguments",
    [{"date": "2030-02-30"}, {"date": "2030-5-6"}, {"earliest_start": "12:00"}, {"earliest_start": "x"}],
)
async def test_a_malformed_date_or_earliest_start_is_refused_before_the_plug_in_is_called(
    client: Client, barber: TwoChairBarber, arguments: dict[str, Any]
) -> None:
    """OSBP spec, Time Discipline (merchant-local date, wall-clock with no offset): no platform call."""
    envelope = await _find(client, **arguments)
    assert (envelope["ok"], envelope["problem"]["code"], envelope["problem"]["retryable"]) == (
        False,
        "invalid_input",
        False,
    )
    assert barber.finds == 0


@pytest.mark.anyio
async def test_a_port_method_returning_the_hosts_result_shape_is_an_internal_adapter_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Platform choice (docs/adapter.md, one result shape): a value or a Problem, never Success/Failure."""

    class OldShape(TwoChairBarber):
        async def describe_service(self, inp: ServiceDescribeInput) -> Any:
            return Success(Service(id="cut", name="Cut"))

    clock = FixedClock(NOW)
    core = OsbpCore(OldShape(), state=tmp_path / "osbp.sqlite3", clock=clock)
    audit = AuditLog(tmp_path / "events.jsonl")
    with caplog.at_level(logging.ERROR, logger="osbp.server"):
        async with Client(create_server(core, audit, clock=clock)) as connected:
            result = await connected.call_tool("osbp_service_describe", {})
    audit.close()
    await core.aclose()
    envelope = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert (envelope["ok"], envelope["problem"]["code"]) == (False, "internal_adapter_error")
    [record] = [r for r in caplog.records if r.name == "osbp.server" and r.exc_info]
    assert "returns its value or a Problem, not an AdapterResult" in str(record.exc_info[1])  # type: ignore[index]
