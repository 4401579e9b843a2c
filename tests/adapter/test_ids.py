"""Ids outside Bookwell's grammar are answered with their not-found Problem and never reach a platform URL."""

from __future__ import annotations

import pytest

from osbp.adapter.ids import is_platform_id
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import (
    AvailabilityFindInput,
    BookingStatusInput,
    PolicyExplainInput,
    ServiceDescribeInput,
)
from osbp.protocol.upstream import capture_upstream
from tests.support.reference import CLEANING, DAY, ORG, REYES, create_input, mandate, problem_of

pytestmark = pytest.mark.anyio

#: Each would otherwise be an over-long URL, another route (a decoded slash, a dot segment), a query or
#: fragment of its own, or a control character in the request line.
HOSTILE = [
    "x" * 70_000,
    "x" * 101,
    "..",
    "../..",
    "a/b",
    "a%2Fb",
    "%2e%2e",
    f"{CLEANING}/../x",
    "?x",
    "#x",
    "a\x00b",
    "a\nb",
    "é",
    " ",
]
ORGANIZATION_READ = f"GET /api/organizations/{ORG}"


def test_seeded_and_generated_ids_are_in_the_grammar() -> None:
    """Platform choice (docs/backend-api.md, Ids): 1-100 letters, digits, _ and -."""
    assert all(is_platform_id(value) for value in (CLEANING, "apt_0123456789abcdef", "x" * 100, "A-9"))
    assert not any(is_platform_id(value) for value in ["", *HOSTILE])


@pytest.mark.parametrize("service_id", HOSTILE, ids=range(len(HOSTILE)))
async def test_a_malformed_service_id_is_service_not_found_without_a_request(
    adapter: OsbpCore, service_id: str
) -> None:
    """OSBP spec, Security and Privacy: an id is checked before it enters a URL (service_not_found)."""
    with capture_upstream() as capture:
        described = problem_of(await adapter.describe_service(ServiceDescribeInput(service_id=service_id)))
        explained = problem_of(await adapter.explain_policy(PolicyExplainInput(service_id=service_id)))
        found = problem_of(
            await adapter.find_availability(AvailabilityFindInput(service_id=service_id, date=DAY))
        )
    assert {described.problem.code, explained.problem.code, found.problem.code} == {"service_not_found"}
    # Only the organization is read (once: the catalog cache holds it after), never the malformed id.
    assert [meta.call for meta in capture.calls] == [ORGANIZATION_READ]


@pytest.mark.parametrize("booking_id", HOSTILE, ids=range(len(HOSTILE)))
async def test_a_malformed_booking_id_is_booking_not_found_without_a_request(
    adapter: OsbpCore, booking_id: str
) -> None:
    """OSBP spec, Result Envelope: bad input is never internal_adapter_error (booking_not_found here)."""
    with capture_upstream() as capture:
        failure = problem_of(await adapter.get_booking(BookingStatusInput(booking_id=booking_id)))
    assert (failure.problem.code, failure.problem.retryable) == ("booking_not_found", False)
    assert capture.calls == []


async def test_malformed_schedule_and_provider_ids_are_their_not_found_in_availability(
    adapter: OsbpCore,
) -> None:
    """OSBP spec, Adapter Contract (status mapping): the same Problems the platform's 404s map to."""
    with capture_upstream() as capture:
        schedule = problem_of(
            await adapter.find_availability(
                AvailabilityFindInput(service_id=CLEANING, date=DAY, schedule_id="../..")
            )
        )
        provider = problem_of(
            await adapter.find_availability(
                AvailabilityFindInput(service_id=CLEANING, date=DAY, provider_id="x" * 70_000)
            )
        )
    assert (schedule.problem.code, provider.problem.code) == ("schedule_not_found", "provider_not_found")
    assert [meta.call for meta in capture.calls] == [ORGANIZATION_READ]


async def test_malformed_ids_in_booking_create_are_named_like_unknown_ids(adapter: OsbpCore) -> None:
    """OSBP spec, Mandate Enforcement: a malformed id inside the mandate is its not-found Problem."""
    codes = [
        problem_of(
            await adapter.create_booking(create_input(idempotency_key=f"k-{field}", **{field: "a/../b"}))
        ).problem.code
        for field in ("service_id", "schedule_id", "provider_id")
    ]
    assert codes == ["service_not_found", "schedule_not_found", "provider_not_found"]


async def test_a_malformed_provider_outside_the_mandate_is_provider_not_allowed(adapter: OsbpCore) -> None:
    """OSBP spec, Mandate Enforcement: scope wins over availability, malformed ids included."""
    inp = create_input(provider_id="x" * 70_000, mandate=mandate(provider_ids=[REYES]))
    assert problem_of(await adapter.create_booking(inp)).problem.code == "provider_not_allowed"
