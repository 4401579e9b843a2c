"""The exact catalog cache: fewer platform requests per booking loop, never a stale catalog answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import (
    AvailabilityFindInput,
    BookingStatusInput,
    PolicyExplainInput,
    ServiceDescribeInput,
)
from tests.support.reference import (
    CLEANING,
    DAY,
    MIDTOWN,
    REYES,
    Platform,
    RecordingTransport,
    approved,
    create_input,
    make_adapter,
    problem_of,
    token_of,
    value_of,
)

pytestmark = pytest.mark.anyio


async def _loop(adapter: OsbpCore, transport: RecordingTransport, *, key: str, time: str) -> list[int]:
    """The canonical loop; the platform requests each step made."""
    counts: list[int] = []
    start = len(transport.requests)

    def step() -> None:
        counts.append(len(transport.requests) - start - sum(counts))

    value_of(await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    step()
    value_of(await adapter.find_availability(AvailabilityFindInput(service_id=CLEANING, date=DAY)))
    step()
    value_of(await adapter.explain_policy(PolicyExplainInput(service_id=CLEANING)))
    step()
    inp = create_input(idempotency_key=key, time=time)
    token = token_of(await adapter.create_booking(inp))
    step()
    receipt = value_of(await adapter.create_booking(approved(inp, token)))
    step()
    value_of(await adapter.get_booking(BookingStatusInput(booking_id=receipt.booking_id)))
    step()
    return counts


@pytest.fixture
def transport() -> RecordingTransport:
    """The real transport, recording every platform request."""
    return RecordingTransport()


@pytest.fixture
async def counted(platform: Platform, state_path: Path, clock: FixedClock, transport: RecordingTransport):
    """The reference adapter on the real platform, its requests recorded."""
    built = make_adapter(platform.base_url, state_path, clock, transport=transport)
    yield built
    await built.aclose()


async def test_the_canonical_loop_makes_seven_platform_requests_and_six_when_warm(
    counted: OsbpCore, transport: RecordingTransport
) -> None:
    """Platform choice: describe 1, find 2, explain 1 (a 304), gated create 1, approved create 1, status 1;
    a second loop needs no organization read."""
    first = await _loop(counted, transport, key="loop-1", time="10:00")
    assert first == [1, 2, 1, 1, 1, 1]
    statuses = [request.url.path.rsplit("/", 1)[-1] for request in transport.requests]
    assert statuses.count("carolyns_dental") == 1, "the organization is read once"
    second = await _loop(counted, transport, key="loop-2", time="11:00")
    assert second == [1, 1, 1, 1, 1, 1]


async def test_repeated_catalog_reads_are_conditional_and_answered_304(
    counted: OsbpCore, transport: RecordingTransport
) -> None:
    """RFC 9110 §13.1.2: a read the cache holds is revalidated with its ETag, never served by age."""
    for _ in range(2):
        value_of(await counted.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    first, second = transport.requests
    assert "if-none-match" not in first.headers
    assert second.headers["if-none-match"].startswith('"')


async def test_a_price_change_between_two_describes_is_seen_by_the_second(
    platform: Platform, counted: OsbpCore
) -> None:
    """OSBP spec, service.describe: the price is the platform's current one, whatever was cached."""
    before = value_of(await counted.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    platform.change_service(CLEANING, price_amount="130.00")
    after = value_of(await counted.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    assert (before.price.amount_minor, after.price.amount_minor) == (12000, 13000)


async def test_a_policy_change_between_two_explains_is_seen_by_the_second(
    platform: Platform, counted: OsbpCore
) -> None:
    """OSBP spec, policy.explain: the policy is the platform's current one, whatever was cached."""
    value_of(await counted.explain_policy(PolicyExplainInput(service_id=CLEANING)))
    platform.change_service(CLEANING, no_show_fee="80.00")
    after = value_of(await counted.explain_policy(PolicyExplainInput(service_id=CLEANING)))
    assert after.no_show_fee is not None
    assert after.no_show_fee.amount_minor == 8000


async def test_a_provider_renamed_between_two_finds_is_seen_by_the_second(
    platform: Platform, counted: OsbpCore, transport: RecordingTransport
) -> None:
    """OSBP spec, availability.find: the slots' names come from the catalog the slots were computed at."""
    query = AvailabilityFindInput(service_id=CLEANING, date=DAY, schedule_id=MIDTOWN, provider_id=REYES)
    before = value_of(await counted.find_availability(query))
    platform.rename_provider(REYES, "Dr. Carolyn Reyes-Park")
    sent = len(transport.requests)
    after = value_of(await counted.find_availability(query))
    assert {slot.provider_name for slot in before} == {"Dr. Carolyn Reyes"}
    assert {slot.provider_name for slot in after} == {"Dr. Carolyn Reyes-Park"}
    # The availability's catalog version moved, so the cached organization was read again.
    assert len(transport.requests) - sent == 2


async def test_an_unknown_service_is_never_answered_from_the_cache(
    platform: Platform, counted: OsbpCore
) -> None:
    """OSBP spec, service.describe: a service the platform no longer has is service_not_found."""
    value_of(await counted.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    with platform.server.runtime.db.write() as session:
        # The merchant moves the service away (the platform has no admin API for it).
        session.execute(
            text("UPDATE service SET organization_id = 'gus_notary' WHERE id = :id"), {"id": CLEANING}
        )
    failure = problem_of(await counted.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    assert failure.problem.code == "service_not_found"
