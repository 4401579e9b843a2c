"""The reference adapter through every fault of the platform's profile, against the real server.

Each test puts a fault profile in force on the real platform (uvicorn on loopback), drives the adapter,
and checks the three things that matter: exactly one appointment per logical create, the right Problem to
the agent, and no exception escaping. Latencies and holds stay in the milliseconds.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import AvailabilityFindInput, ServiceDescribeInput, VerificationSendInput
from tests.support.logs import capture_logs, events, fields
from tests.support.reference import (
    CLEANING,
    DAY,
    JANE,
    MIDTOWN,
    ORG,
    Platform,
    approved,
    book,
    create_input,
    make_adapter,
    problem_of,
    token_of,
    value_of,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

CREATE = "create_appointment"
CREATE_ENDPOINT = "POST /api/organizations/{organization_id}/appointments"


@pytest.fixture
async def quick(platform: Platform, state_path: Path, clock: FixedClock) -> Any:
    """The reference adapter with a short read timeout: a held request gives up in a fraction of a second."""
    built = make_adapter(platform.base_url, state_path, clock, read_timeout_s=0.3)
    yield built
    await built.aclose()


@pytest.mark.parametrize(
    ("rule", "creates"),
    [
        ({"mode": "reset"}, 2),
        ({"mode": "timeout", "hold_ms": 5000}, 2),
        ({"mode": "lost_response"}, 2),
        ({"mode": "error", "status": 500}, 2),
        ({"mode": "error", "status": 502}, 2),
        ({"mode": "error", "status": 503}, 2),
        ({"mode": "error", "status": 503, "retry_after": 1}, 2),
        ({"mode": "slow_commit", "hold_ms": 50}, 1),
        ({"mode": "latency", "latency_ms": 20, "jitter_ms": 10}, 1),
    ],
)
async def test_one_fault_on_the_create_still_books_exactly_one_appointment(
    platform: Platform, quick: OsbpCore, rule: dict[str, Any], creates: int
):
    """Platform choice (retry policy) / OSBP spec, Idempotency: the keyed create is retried with the same
    native key, so a dropped, held, lost or failed create ends in one appointment and a receipt."""
    platform.put_faults({"endpoint": CREATE, "count": 1, **rule})
    receipt = value_of(await book(quick, create_input()))
    assert receipt.booking_id.startswith("apt_")
    assert platform.fault_hits() == [1]
    assert (platform.create_requests(ORG), platform.active_appointments(ORG)) == (creates, 1)


async def test_a_create_failing_past_the_retries_is_a_retryable_problem_and_books_nothing(
    platform: Platform, adapter: OsbpCore
):
    """OSBP spec, Adapter Contract: 5xx after the retries → retryable upstream_unavailable; the agent's
    retry with the same key books once the platform recovers."""
    platform.put_faults({"endpoint": CREATE_ENDPOINT, "mode": "error", "status": 503})
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    failure = problem_of(await adapter.create_booking(approved(inp, token)))
    assert (failure.problem.code, failure.problem.retryable) == ("upstream_unavailable", True)
    assert (platform.create_requests(ORG), platform.active_appointments(ORG)) == (3, 0)
    platform.put_faults()
    value_of(await adapter.create_booking(approved(inp, token)))
    assert platform.active_appointments(ORG) == 1


async def test_lost_answers_past_the_retries_resume_to_the_one_appointment_on_the_agents_retry(
    platform: Platform, adapter: OsbpCore
):
    """OSBP spec, Idempotency (ambiguous outcome): every attempt committed-or-replayed but lost; the agent
    gets the retryable Problem, and its retry resumes the placed attempt to the same one appointment."""
    platform.put_faults({"endpoint": CREATE, "mode": "lost_response", "count": 3})
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    lost = problem_of(await adapter.create_booking(approved(inp, token)))
    assert (lost.problem.code, lost.problem.retryable) == ("upstream_unavailable", True)
    assert platform.active_appointments(ORG) == 1
    receipt = value_of(await adapter.create_booking(approved(inp, token)))
    assert platform.active_appointments(ORG) == 1
    assert platform.appointment(ORG, receipt.booking_id)["status"] == "confirmed"


async def test_a_429_burst_on_the_create_is_rate_limited_for_the_agent_and_its_retry_books_once(
    platform: Platform, adapter: OsbpCore
):
    """OSBP spec, Problem codes: upstream 429 → rate_limited (retryable), with the wait the platform
    asked for; not retried by the adapter, so nothing is booked until the agent retries."""
    platform.put_faults({"endpoint": CREATE, "mode": "rate_limited", "retry_after": 7, "count": 1})
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    limited = problem_of(await adapter.create_booking(approved(inp, token)))
    assert (limited.problem.code, limited.problem.retryable) == ("rate_limited", True)
    assert "Retry after 7 seconds" in limited.problem.message
    assert (platform.create_requests(ORG), platform.active_appointments(ORG)) == (1, 0)
    value_of(await adapter.create_booking(approved(inp, token)))
    assert platform.active_appointments(ORG) == 1


@pytest.mark.parametrize("rule", [{"mode": "reset"}, {"mode": "error", "status": 502}, {"mode": "timeout"}])
async def test_a_faulted_read_is_retried_to_its_answer(platform: Platform, quick: OsbpCore, rule):
    """Platform choice (retry policy): reads are safe to repeat, so one failure costs the agent nothing."""
    platform.put_faults({"endpoint": "read_service", "count": 1, **rule})
    service = value_of(await quick.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    assert service.id == CLEANING
    assert platform.fault_hits() == [1]


async def test_availability_survives_latency_and_a_reset(platform: Platform, adapter: OsbpCore):
    """Platform choice (retry policy): the deprecated availability read is retried like any read."""
    platform.put_faults(
        {"endpoint": "read_availability", "mode": "reset", "count": 1},
        {"endpoint": "read_availability", "mode": "latency", "latency_ms": 10},
    )
    slots = value_of(
        await adapter.find_availability(
            AvailabilityFindInput(service_id=CLEANING, schedule_id=MIDTOWN, date=DAY)
        )
    )
    assert slots
    assert platform.fault_hits() == [1, 1]


async def test_a_verification_send_is_never_repeated(platform: Platform, state_path: Path, clock: FixedClock):
    """Platform choice (retry policy): a POST without an idempotency key could send a second code."""
    platform.put_faults({"endpoint": "send_verification", "mode": "reset"})
    notary = make_adapter(platform.base_url, state_path, clock, organization_id="gus_notary")
    try:
        failure = problem_of(await notary.send_verification(VerificationSendInput(customer=JANE)))
    finally:
        await notary.aclose()
    assert (failure.problem.code, failure.problem.retryable) == ("upstream_unavailable", True)
    assert platform.fault_hits() == [1]


async def test_the_operator_is_told_of_each_retry_of_a_create(platform: Platform, adapter: OsbpCore):
    """Platform choice (structured logs): a retry is one event with endpoint, attempt and reason."""
    platform.put_faults({"endpoint": CREATE, "mode": "reset", "count": 1})
    with capture_logs(logging.INFO) as records:
        value_of(await book(adapter, create_input()))
    [retry] = events(records, "upstream_retry")
    assert (fields(retry)["endpoint"], fields(retry)["attempt"], fields(retry)["reason"]) == (
        "POST /api/organizations/{organization_id}/appointments",
        1,
        "transport",
    )
    assert events(records, "upstream_gave_up") == []


async def test_after_the_sunset_availability_is_a_clear_terminal_problem(
    platform: Platform, adapter: OsbpCore
):
    """RFC 8594: the retired endpoint's 410 is not retried; the agent gets a non-retryable Problem and
    the operator a log event naming the successor."""
    assert platform.client.post("/_testing/clock", json={"now": "2032-10-02T12:00:00Z"}).status_code == 200
    with capture_logs(logging.INFO) as records:
        failure = problem_of(
            await adapter.find_availability(
                AvailabilityFindInput(service_id=CLEANING, schedule_id=MIDTOWN, date="2032-10-05")
            )
        )
    assert (failure.problem.code, failure.problem.retryable) == ("internal_adapter_error", False)
    assert "retired" in failure.problem.message
    [retired] = events(records, "upstream_endpoint_retired")
    assert fields(retired)["successor"] == "https://developer.bookwell.example/deprecations/availability-v1"
    assert events(records, "upstream_retry") == []
