"""Helpers for tests of the reference adapter: the platform as tests see it, inputs, and result accessors."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2

from osbp.adapter import AdapterSettings, build_adapter
from osbp.adapter.upstream import LifecycleNotices
from osbp.backend.serving import PlatformServer
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import Approval, BookingCreateInput, BookingMandate, Customer, Money

#: Monday 2026-05-04 08:00 in New York: Tuesday 2026-05-05 is an ordinary open weekday everywhere.
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
DAY = "2026-05-05"
ORG = "carolyns_dental"
CLEANING = "carolyns_dental_cleaning"
MIDTOWN = "carolyns_dental_midtown"
REYES = "carolyns_dental_dr_reyes"
OKAFOR = "carolyns_dental_dr_okafor"
JANE = Customer(display_name="Jane Customer", given_name="Jane", family_name="Customer", phone="+12125550199")


@dataclass
class Platform:
    """The running platform as tests see it: its URL and its test-only control surface."""

    base_url: str
    server: PlatformServer
    client: httpx2.Client = field(repr=False)

    def arm(self, organization_id: str, outcome: str) -> None:
        """Make the organization's next appointment create fail with ``outcome``."""
        response = self.client.post(
            "/_testing/arm", json={"organization_id": organization_id, "outcome": outcome}
        )
        assert response.status_code == 200

    def put_faults(self, *rules: dict[str, Any], seed: int = 0) -> None:
        """Put a fault profile with ``rules`` in force (``/_testing/faults``; each test's reset clears it)."""
        response = self.client.put("/_testing/faults", json={"seed": seed, "rules": list(rules)})
        assert response.status_code == 200, response.text

    def fault_hits(self) -> list[int]:
        """How many requests each rule of the profile in force has hit."""
        hits: list[int] = self.client.get("/_testing/faults").json()["hits"]
        return hits

    def create_requests(self, organization_id: str | None = None) -> int:
        """Appointment-create HTTP requests the platform received since the last reset."""
        params = {"organization_id": organization_id} if organization_id else None
        count: int = self.client.get("/_testing/stats", params=params).json()["create_requests"]
        return count

    def active_appointments(self, organization_id: str | None = None) -> int:
        """Pending + confirmed appointments on the platform."""
        params = {"organization_id": organization_id} if organization_id else None
        count: int = self.client.get("/_testing/stats", params=params).json()["active_appointments"]
        return count

    def latest_code(self, organization_id: str) -> str:
        """The code in the newest outbox message of the organization."""
        messages = self.client.get("/_testing/outbox", params={"organization_id": organization_id}).json()
        code: str = messages["messages"][-1]["code"]
        return code

    def change_service(self, service_id: str, organization_id: str = ORG, **fields: Any) -> None:
        """The merchant changes a service's price or policy on the running platform (a catalog change)."""
        body = {"organization_id": organization_id, "service_id": service_id, **fields}
        assert self.client.post("/_testing/service", json=body).status_code == 200

    def rename_provider(self, provider_id: str, name: str, organization_id: str = ORG) -> None:
        """The merchant renames a provider on the running platform (a catalog change)."""
        body = {"organization_id": organization_id, "provider_id": provider_id, "name": name}
        assert self.client.post("/_testing/provider", json=body).status_code == 200

    def appointment(self, organization_id: str, appointment_id: str) -> dict[str, Any]:
        """The raw native appointment (read with the platform's own API, not through the adapter)."""
        response = self.client.get(f"/api/organizations/{organization_id}/appointments/{appointment_id}")
        assert response.status_code == 200
        body: dict[str, Any] = response.json()
        return body


def make_adapter(
    base_url: str,
    state_path: Path,
    clock: FixedClock,
    *,
    organization_id: str = ORG,
    transport: httpx2.AsyncBaseTransport | None = None,
    **settings: Any,
) -> OsbpCore:
    """A reference adapter on ``base_url``, its own lifecycle-notice record, millisecond retry waits."""
    quick = {"retry_backoff_s": 0.002, "retry_max_backoff_s": 0.01} | settings
    adapter_settings = AdapterSettings(
        platform_base_url=base_url, organization_id=organization_id, state_path=state_path, **quick
    )
    return build_adapter(adapter_settings, clock=clock, transport=transport, notices=LifecycleNotices())


def mandate(**overrides: Any) -> BookingMandate:
    """A mandate that allows the Carolyn's Dental cleaning on DAY (overridable field by field)."""
    values: dict[str, Any] = {
        "id": "mnd_test_001",
        "expires_at": "2026-05-05T23:59:59-04:00",
        "allowed_actions": ["booking.create"],
        "organization_id": ORG,
        "earliest_start": f"{DAY}T08:00:00",
        "latest_end": f"{DAY}T18:00:00",
        "max_price": Money(amount_minor=15000, currency="USD"),
    } | overrides
    return BookingMandate(**values)


def create_input(**overrides: Any) -> BookingCreateInput:
    """A booking.create input for the cleaning with Dr. Reyes at 10:00 on DAY (overridable)."""
    values: dict[str, Any] = {
        "mandate": mandate(),
        "idempotency_key": "idem-test-001",
        "service_id": CLEANING,
        "schedule_id": MIDTOWN,
        "provider_id": REYES,
        "date": DAY,
        "time": "10:00",
        "customer": JANE,
    } | overrides
    return BookingCreateInput(**values)


def problem_of(result: AdapterResult[Any]) -> Failure:
    """The Failure of a result (fails the test on a Success)."""
    assert isinstance(result, Failure), f"expected a Problem, got {result!r}"
    return result


def value_of(result: AdapterResult[Any]) -> Any:
    """The value of a Success (fails the test with the Problem otherwise)."""
    assert isinstance(result, Success), f"expected success, got {result!r}"
    return result.value


def token_of(result: AdapterResult[Any]) -> str:
    """The approval token of a final-confirmation challenge."""
    failure = problem_of(result)
    assert failure.problem.code == "requires_user_confirmation"
    match = APPROVAL_TOKEN_PATTERN.search(failure.problem.message)
    assert match is not None, "the challenge carries no approval.token"
    return match.group(1)


def approved(inp: BookingCreateInput, token: str) -> BookingCreateInput:
    """``inp`` retried with the user's approval."""
    return inp.model_copy(update={"approval": Approval(confirmed=True, token=token)})


async def book(adapter: OsbpCore, inp: BookingCreateInput) -> AdapterResult[Any]:
    """Preflight, then the approved create (the canonical two-call flow)."""
    return await adapter.create_booking(approved(inp, token_of(await adapter.create_booking(inp))))


def summary_of(message: str) -> str:
    """The user-facing summary part of a challenge message (without the agent instruction)."""
    return re.split(r"\n\nAgent instruction", message)[0]


class ForwardingTransport(httpx2.AsyncBaseTransport):
    """The real network transport; subclasses watch, hold back or change what passes through it."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send for real."""
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the real transport."""
        await self._inner.aclose()


class RecordingTransport(ForwardingTransport):
    """The real network transport, recording every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[httpx2.Request] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Record, then send for real."""
        self.requests.append(request)
        return await super().handle_async_request(request)
