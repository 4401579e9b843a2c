"""The reference adapter's read, verification and status methods against the real platform on loopback."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import BookingAdapter, Failure, Success
from osbp.protocol.core import SNAPSHOT_FALLBACK, OsbpCore
from osbp.protocol.models import (
    AvailabilityFindInput,
    BookingStatusInput,
    Customer,
    OperatingHours,
    PlatformIdentity,
    PolicyExplainInput,
    ServiceDescribeInput,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.upstream import capture_upstream
from tests.support.logs import capture_logs, events, fields
from tests.support.reference import (
    CLEANING,
    DAY,
    MIDTOWN,
    NOW,
    OKAFOR,
    ORG,
    REYES,
    Platform,
    book,
    create_input,
    make_adapter,
    problem_of,
    value_of,
)

pytestmark = pytest.mark.anyio


async def test_the_adapter_satisfies_the_protocol_contract(adapter: OsbpCore) -> None:
    """OSBP spec, Adapter Contract: the seven methods plus a static platform identity."""
    assert isinstance(adapter, BookingAdapter)
    assert adapter.platform == PlatformIdentity(vendor="bookwell", api_version="2026-04-01")


async def test_describe_service_reads_the_platform(adapter: OsbpCore) -> None:
    """OSBP spec, service.describe: duration, price in minor units, consultation flag."""
    service = value_of(await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    assert (service.id, service.name, service.duration) == (CLEANING, "Regular cleaning", "PT45M")
    assert (service.price.amount_minor, service.price.currency) == (12000, "USD")
    assert service.requires_consultation is False


async def test_describe_service_uses_the_configured_default(platform: Platform, tmp_path: Path) -> None:
    """OSBP spec, service.describe: service_id is optional; the adapter may use its configured default."""
    adapter = make_adapter(platform.base_url, tmp_path / "s", FixedClock(NOW), default_service_id=CLEANING)
    service = value_of(await adapter.describe_service(ServiceDescribeInput()))
    await adapter.aclose()
    assert service.id == CLEANING


async def test_reads_without_a_service_and_without_a_default_say_missing_config(
    adapter: OsbpCore,
) -> None:
    """OSBP spec, Problem codes: adapters may emit adapter-specific codes such as missing_config."""
    with capture_upstream() as capture:
        failure = problem_of(await adapter.describe_service(ServiceDescribeInput()))
    assert failure.problem.code == "missing_config"
    assert capture.calls == []


async def test_unknown_service_is_service_not_found(adapter: OsbpCore) -> None:
    """OSBP spec, Adapter Contract (status mapping): the platform's 404 becomes an adapter-specific,
    non-retryable Problem."""
    failure = problem_of(await adapter.describe_service(ServiceDescribeInput(service_id="no_such_service")))
    assert (failure.problem.code, failure.problem.retryable) == ("service_not_found", False)


async def test_unknown_organization_is_a_configuration_problem(platform: Platform, tmp_path: Path) -> None:
    """Platform choice: a wrong OSBP_ORGANIZATION_ID is named as such, not as a missing service."""
    adapter = make_adapter(platform.base_url, tmp_path / "s", FixedClock(NOW), organization_id="nope")
    failure = problem_of(await adapter.explain_policy(PolicyExplainInput(service_id=CLEANING)))
    await adapter.aclose()
    assert failure.problem.code == "organization_not_found"


async def test_find_availability_returns_create_ready_slots_with_display_context_once(
    adapter: OsbpCore,
) -> None:
    """OSBP spec, availability.find: create-ready ids, instant plus wall-clock, names, price; the answer's
    first slot also carries the schedule's hours, the first of each provider its image (platform choice:
    repeated display context once)."""
    slots = value_of(await adapter.find_availability(AvailabilityFindInput(service_id=CLEANING, date=DAY)))
    assert slots[0].provider_id == OKAFOR
    assert slots[0].schedule_hours == [
        OperatingHours(day=1, open="09:00", close="17:00"),
        OperatingHours(day=2, open="09:00", close="17:00"),
        OperatingHours(day=3, open="08:00", close="12:00"),
        OperatingHours(day=3, open="13:00", close="18:00"),
        OperatingHours(day=4, open="09:00", close="17:00"),
        OperatingHours(day=5, open="09:00", close="17:00"),
        OperatingHours(day=6, open="09:00", close="13:00"),
    ]
    first = next(slot for slot in slots if slot.provider_id == REYES)
    assert first.to_wire() == {
        "id": f"{MIDTOWN}:{REYES}:{CLEANING}:2026-05-05T09:00:00",
        "organization_id": "carolyns_dental",
        "organization_name": "Carolyn's Dental",
        "schedule_id": MIDTOWN,
        "schedule_name": "Carolyn's Dental Midtown",
        "schedule_address": "100 Example Avenue, Suite 5, New York, NY 10001, US",
        "schedule_latitude": 40.7484,
        "schedule_longitude": -73.9857,
        "schedule_timezone": "America/New_York",
        "provider_id": REYES,
        "provider_name": "Dr. Carolyn Reyes",
        "provider_image_url": "https://images.bookwell.example/providers/carolyns_dental_dr_reyes.jpg",
        "service_id": CLEANING,
        "starts_at": "2026-05-05T13:00:00Z",
        "ends_at": "2026-05-05T13:45:00Z",
        "starts_at_local": "2026-05-05T09:00:00",
        "ends_at_local": "2026-05-05T09:45:00",
        "price": {"amount_minor": 12000, "currency": "USD", "type": "fixed", "display": "$120.00"},
    }


async def test_find_availability_filters_by_provider_and_uses_the_default_schedule(
    platform: Platform, tmp_path: Path
) -> None:
    """OSBP spec, availability.find: provider_id optional; schedule_id may default to configuration."""
    adapter = make_adapter(
        platform.base_url,
        tmp_path / "s",
        FixedClock(NOW),
        default_service_id=CLEANING,
        default_schedule_id=MIDTOWN,
    )
    slots = value_of(await adapter.find_availability(AvailabilityFindInput(date=DAY, provider_id=OKAFOR)))
    await adapter.aclose()
    assert slots
    assert {(slot.provider_id, slot.schedule_id, slot.service_id) for slot in slots} == {
        (OKAFOR, MIDTOWN, CLEANING)
    }


async def test_online_location_slots_have_no_address_or_coordinates(
    platform: Platform, tmp_path: Path
) -> None:
    """OSBP spec, Adapter Contract: address and coordinates are omitted for online locations."""
    adapter = make_adapter(platform.base_url, tmp_path / "s", FixedClock(NOW), organization_id="gus_notary")
    inp = AvailabilityFindInput(
        service_id="gus_notary_remote_signing", schedule_id="gus_notary_online", date=DAY
    )
    slots = value_of(await adapter.find_availability(inp))
    await adapter.aclose()
    assert slots
    for slot in slots:
        wire = slot.to_wire()
        assert wire["schedule_id"] == "gus_notary_online"
        assert not {"schedule_address", "schedule_latitude", "schedule_longitude"} & set(wire)
        assert wire["schedule_timezone"] == "America/New_York"


async def test_zero_exponent_prices_are_not_scaled_by_100(platform: Platform, tmp_path: Path) -> None:
    """OSBP spec, Money: JPY has exponent 0, so ¥12,000 is amount_minor 12000."""
    adapter = make_adapter(
        platform.base_url, tmp_path / "s", FixedClock(NOW), organization_id="conformance_co"
    )
    jpy = value_of(await adapter.describe_service(ServiceDescribeInput(service_id="conformance_fixed_jpy")))
    kwd = value_of(await adapter.describe_service(ServiceDescribeInput(service_id="conformance_fixed_kwd")))
    await adapter.aclose()
    assert (jpy.price.amount_minor, jpy.price.currency, jpy.price.display) == (12000, "JPY", "¥12,000")
    assert (kwd.price.amount_minor, kwd.price.currency) == (12500, "KWD")


async def test_a_closed_day_has_no_slots(adapter: OsbpCore) -> None:
    """OSBP spec, availability.find: an empty list, not a Problem, when nothing is open."""
    assert (
        value_of(
            await adapter.find_availability(AvailabilityFindInput(service_id=CLEANING, date="2026-05-03"))
        )
        == []
    )


async def test_a_malformed_date_is_rejected_without_a_platform_call(adapter: OsbpCore) -> None:
    """OSBP spec, availability.find: date is a merchant-local YYYY-MM-DD."""
    with capture_upstream() as capture:
        failure = problem_of(
            await adapter.find_availability(AvailabilityFindInput(service_id=CLEANING, date="05/05/2026"))
        )
    assert failure.problem.code == "invalid_input"
    assert capture.calls == []


async def test_booked_time_disappears_from_availability(adapter: OsbpCore) -> None:
    """OSBP spec, Slot: inventory must not be double-sold."""
    value_of(await book(adapter, create_input()))
    inp = AvailabilityFindInput(service_id=CLEANING, date=DAY, provider_id=REYES)
    slots = value_of(await adapter.find_availability(inp))
    assert "2026-05-05T10:00:00" not in {slot.starts_at_local for slot in slots}


async def test_explain_policy_for_a_deposit_service(adapter: OsbpCore) -> None:
    """OSBP spec, policy.explain: payment requirement, deposit, windows and the organization block."""
    policy = value_of(await adapter.explain_policy(PolicyExplainInput(service_id="carolyns_dental_crown")))
    assert policy.payment_requirement == "deposit"
    assert (policy.deposit.amount_minor, policy.deposit.currency) == (25000, "USD")
    assert policy.organization is not None
    assert policy.organization.to_wire() == {
        "id": "carolyns_dental",
        "name": "Carolyn's Dental",
        "timezone": "America/New_York",
        "currency": "USD",
        "country": "US",
    }


async def test_explain_policy_surfaces_a_cancellation_fee(platform: Platform, tmp_path: Path) -> None:
    """OSBP spec, policy.explain: cancellation_fee is surfaced when the platform reports it."""
    adapter = make_adapter(platform.base_url, tmp_path / "s", FixedClock(NOW), organization_id="andys_auto")
    policy = value_of(await adapter.explain_policy(PolicyExplainInput(service_id="andys_auto_oil_change")))
    await adapter.aclose()
    assert policy.cancellation_fee is not None
    assert (policy.cancellation_fee.amount_minor, policy.cancellation_fee.currency) == (3000, "EUR")
    assert policy.organization is not None
    assert policy.organization.timezone == "Europe/Berlin"


async def test_verification_send_delivers_a_code_by_sms(platform: Platform, tmp_path: Path) -> None:
    """OSBP spec, verification.send: the platform sends the code; purpose is booking:{organization_id}."""
    adapter = make_adapter(platform.base_url, tmp_path / "s", FixedClock(NOW), organization_id="gus_notary")
    sent = value_of(
        await adapter.send_verification(VerificationSendInput(customer=Customer(phone="+12125550142")))
    )
    await adapter.aclose()
    assert sent.to_wire() == {"sent": True, "method": "sms", "purpose": "booking:gus_notary"}
    assert len(platform.latest_code("gus_notary")) == 6


async def test_verification_send_without_verification_is_not_supported(adapter: OsbpCore) -> None:
    """OSBP spec, Adapter Contract: verification_not_supported when the organization has no verification."""
    failure = problem_of(
        await adapter.send_verification(VerificationSendInput(customer=Customer(phone="+12125550142")))
    )
    assert failure.problem.code == "verification_not_supported"


async def test_verification_send_for_another_purpose_is_rejected(platform: Platform, tmp_path: Path) -> None:
    """OSBP spec, verification.send: purpose follows booking:{organization_id}."""
    adapter = make_adapter(platform.base_url, tmp_path / "s", FixedClock(NOW), organization_id="gus_notary")
    with capture_upstream() as capture:
        failure = problem_of(
            await adapter.send_verification(
                VerificationSendInput(
                    customer=Customer(phone="+12125550142"), purpose="booking:carolyns_dental"
                )
            )
        )
    await adapter.aclose()
    assert failure.problem.code == "invalid_verification_purpose"
    assert capture.calls == []


async def test_verification_send_needs_the_contact_the_channel_uses(
    platform: Platform, tmp_path: Path
) -> None:
    """Platform choice: an sms-verifying organization needs the customer's phone."""
    adapter = make_adapter(platform.base_url, tmp_path / "s", FixedClock(NOW), organization_id="gus_notary")
    failure = problem_of(
        await adapter.send_verification(VerificationSendInput(customer=Customer(email="j@example.com")))
    )
    await adapter.aclose()
    assert failure.problem.code == "invalid_customer"
    assert "phone" in failure.problem.message


async def test_verification_verify_is_rejected_without_touching_the_platform(
    platform: Platform, tmp_path: Path
) -> None:
    """OSBP spec, verification.verify: no safe independent verify primitive → adapter-specific Problem."""
    adapter = make_adapter(platform.base_url, tmp_path / "s", FixedClock(NOW), organization_id="gus_notary")
    with capture_upstream() as capture:
        failure = problem_of(
            await adapter.verify_code(
                VerificationVerifyInput(customer=Customer(phone="+12125550142"), code="123456")
            )
        )
    await adapter.aclose()
    assert (failure.problem.code, failure.problem.retryable) == ("pre_verification_not_supported", False)
    assert "booking.create" in failure.problem.message
    assert capture.calls == []


async def test_booking_status_reads_current_platform_state(platform: Platform, adapter: OsbpCore) -> None:
    """OSBP spec, booking.status: a direct platform read reports the appointment's current state."""
    receipt = value_of(await book(adapter, create_input()))
    booking = value_of(await adapter.get_booking(BookingStatusInput(booking_id=receipt.booking_id)))
    assert (booking.status, booking.starts_at, booking.starts_at_local) == (
        "booked",
        "2026-05-05T14:00:00Z",
        "2026-05-05T10:00:00",
    )
    cancel = platform.client.post(
        f"/api/organizations/carolyns_dental/appointments/{receipt.booking_id}/cancel"
    )
    assert cancel.status_code == 200
    with capture_upstream() as capture:
        after = value_of(await adapter.get_booking(BookingStatusInput(booking_id=receipt.booking_id)))
    assert after.status == "cancelled"
    assert [meta.call for meta in capture.calls] == [
        f"GET /api/organizations/carolyns_dental/appointments/{receipt.booking_id}"
    ]


async def test_booking_status_of_an_unknown_id_is_booking_not_found(adapter: OsbpCore) -> None:
    """OSBP spec, Problem codes: booking_not_found when no appointment matches."""
    failure = problem_of(await adapter.get_booking(BookingStatusInput(booking_id="apt_0000000000000000")))
    assert (failure.problem.code, failure.problem.retryable) == ("booking_not_found", False)
    missing = problem_of(await adapter.get_booking(BookingStatusInput()))
    assert missing.problem.code == "booking_not_found"


async def test_booking_status_falls_back_to_the_creation_snapshot_only_when_the_platform_is_unreachable(
    platform: Platform, adapter: OsbpCore, state_path: Path, clock: FixedClock
) -> None:
    """OSBP spec, booking.status: a local record is a documented fallback that never pretends to be fresh."""
    receipt = value_of(await book(adapter, create_input()))
    fresh = value_of(await adapter.get_booking(BookingStatusInput(booking_id=receipt.booking_id)))
    offline = make_adapter(f"http://127.0.0.1:{_closed_port()}", state_path, clock)
    try:
        result = await offline.get_booking(BookingStatusInput(booking_id=receipt.booking_id))
        unknown = problem_of(await offline.get_booking(BookingStatusInput(booking_id="apt_0000000000000000")))
    finally:
        await offline.aclose()
    assert isinstance(result, Success)
    assert result.value == fresh
    assert result.runtime == SNAPSHOT_FALLBACK
    assert result.runtime.idempotency is None
    assert "not current platform state" in (result.runtime.message or "")
    assert (unknown.problem.code, unknown.problem.retryable) == ("upstream_unavailable", True)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_a_refused_connection_is_a_retryable_upstream_unavailable(tmp_path: Path) -> None:
    """OSBP spec, Adapter Contract: refused connections map to a retryable adapter-specific Problem."""
    adapter = make_adapter(f"http://127.0.0.1:{_closed_port()}", tmp_path / "s", FixedClock(NOW))
    failure = problem_of(await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    await adapter.aclose()
    assert (failure.problem.code, failure.problem.retryable) == ("upstream_unavailable", True)


async def test_an_unreachable_platform_is_logged_as_an_event_with_its_fields(tmp_path: Path) -> None:
    """Platform choice (structured logs): the event name is the message, the call and reason are fields."""
    adapter = make_adapter(f"http://127.0.0.1:{_closed_port()}", tmp_path / "s", FixedClock(NOW))
    with capture_logs() as records:
        await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING))
    await adapter.aclose()
    [record] = events(records, "upstream_unavailable")
    assert (record.name, record.levelno) == ("osbp.adapter", logging.WARNING)
    call = f"GET /api/organizations/{ORG}/services/{CLEANING}"
    assert fields(record) == {"call": call, "reason": "connect"}


async def test_platform_rate_limit_is_rate_limited_with_meta(tmp_path: Path) -> None:
    """OSBP spec, Adapter Contract: platform 429 → rate_limited (retryable); Retry-After captured in the
    upstream meta."""
    settings = BackendSettings(
        db=":memory:", port=0, now=NOW, rate_limit_quota=1, rate_limit_window_seconds=60
    )
    async with PlatformServer(settings) as server:
        adapter = make_adapter(server.base_url, tmp_path / "s", FixedClock(NOW))
        first = await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING))
        with capture_upstream() as capture:
            second = await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING))
        await adapter.aclose()
    assert isinstance(first, Success)
    assert isinstance(second, Failure)
    assert (second.problem.code, second.problem.retryable) == ("rate_limited", True)
    meta = capture.calls[-1]
    assert meta.status == 429
    assert meta.ratelimit is not None
    assert "retry-after" in meta.ratelimit
    assert meta.server == "Bookwell/0.1.0"
    assert meta.api_version == "2026-04-01"
    assert meta.request_id


async def test_upstream_meta_of_a_read_is_captured_for_the_audit(adapter: OsbpCore) -> None:
    """OSBP spec, Audit: the meta of the tool call in progress is available to the caller."""
    with capture_upstream() as capture:
        value_of(await adapter.explain_policy(PolicyExplainInput(service_id=CLEANING)))
    assert sorted(meta.call for meta in capture.calls) == [
        "GET /api/organizations/carolyns_dental",
        f"GET /api/organizations/carolyns_dental/services/{CLEANING}",
    ]
    for meta in capture.calls:
        assert (meta.status, meta.server, meta.api_version) == (200, "Bookwell/0.1.0", "2026-04-01")
        assert meta.request_id
        assert meta.ratelimit
        assert "ratelimit-policy" in meta.ratelimit
        assert meta.deprecation is None
