"""The demo's verticals and the mandates the agent builds from them."""

from datetime import UTC, datetime

from osbp.demo.scenarios import MANDATE_HORIZON_DAYS, VERTICALS, build_mandate, local_today
from osbp.protocol.mandate import validate_mandate
from osbp.protocol.models import Money, Policy, Service, Slot

NOW = datetime(2030, 5, 6, 13, tzinfo=UTC)


def test_the_mandate_window_is_merchant_wall_clock_from_tomorrow():
    """OSBP spec, BookingMandate: earliest_start/latest_end are wall-clock strings without an offset."""
    mandate = build_mandate(VERTICALS["dental"], NOW)
    assert mandate.earliest_start == "2030-05-07T00:00:00"
    assert mandate.latest_end == f"2030-05-{6 + MANDATE_HORIZON_DAYS:02d}T23:59:59"
    assert mandate.expires_at == "2030-05-20T13:00:00Z"


def test_the_merchant_local_date_follows_the_merchants_zone():
    """OSBP spec, Time Discipline: dates are merchant-local; 23:30Z is already tomorrow in Berlin."""
    late = datetime(2030, 5, 6, 23, 30, tzinfo=UTC)
    assert local_today(late, "America/New_York").isoformat() == "2030-05-06"
    assert local_today(late, "Europe/Berlin").isoformat() == "2030-05-07"


def test_the_same_clock_builds_the_same_mandate():
    """Platform choice: --now makes the demo deterministic, mandate included."""
    assert build_mandate(VERTICALS["spa"], NOW) == build_mandate(VERTICALS["spa"], NOW)


def test_every_vertical_mandate_admits_its_own_service_and_refuses_the_over_cap_one():
    """OSBP spec, Mandate Enforcement: the demo's happy path is inside scope, the coda above the cap."""
    vertical = VERTICALS["dental"]
    mandate = build_mandate(vertical, NOW)
    policy = Policy(payment_requirement="none")

    def slot(service_id: str, amount: int) -> tuple[Service, Slot]:
        price = Money(amount_minor=amount, currency="USD", type="fixed")
        service = Service(id=service_id, name=service_id, price=price)
        return service, Slot(
            id="x",
            organization_id=vertical.organization_id,
            schedule_id=vertical.schedule_id,
            provider_id="carolyns_dental_dr_reyes",
            service_id=service_id,
            starts_at_local="2030-05-07T10:00:00",
            ends_at_local="2030-05-07T10:45:00",
            price=price,
        )

    service, cleaning = slot(vertical.service_id, 12000)
    assert validate_mandate(mandate, slot=cleaning, service=service, policy=policy, now=NOW) is None
    assert vertical.over_cap_service_id is not None
    service, whitening = slot(vertical.over_cap_service_id, 25000)
    refused = validate_mandate(mandate, slot=whitening, service=service, policy=policy, now=NOW)
    assert refused is not None
    assert refused.code == "price_exceeds_mandate"
