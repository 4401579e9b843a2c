"""Wire models: exact names, omitted optionals, strict tool inputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from osbp.protocol.models import (
    AMOUNT_MINOR_MAX,
    Approval,
    AvailabilityFindInput,
    BookingCreateInput,
    FailureEnvelope,
    HandoffRequestInput,
    Money,
    Problem,
    Receipt,
    RuntimeDiagnostics,
    Service,
    Slot,
    SuccessEnvelope,
)

SPEC_MANDATE: dict[str, Any] = {
    "id": "mnd_2026_05_01_001",
    "expires_at": "2026-05-01T23:59:59-07:00",
    "allowed_actions": ["booking.create"],
    "organization_id": "org_01jw3z8x9k2m4n6p8r0s1t3v5w",
    "service_ids": ["service_123"],
    "provider_ids": ["provider_123"],
    "schedule_ids": ["schedule_123"],
    "earliest_start": "2026-05-01T09:00:00",
    "latest_end": "2026-05-14T18:00:00",
    "max_price": {"amount_minor": 10000, "currency": "USD"},
    "allow_policy_fee": False,
    "max_extra_fee": {"amount_minor": 0, "currency": "USD"},
}
SPEC_CREATE: dict[str, Any] = {
    "mandate": SPEC_MANDATE,
    "idempotency_key": "idem_2026_05_01_001",
    "service_id": "service_123",
    "schedule_id": "schedule_123",
    "provider_id": "provider_123",
    "date": "2026-05-05",
    "time": "13:00",
    "customer": {
        "id": "customer_123",
        "display_name": "Jane Customer",
        "given_name": "Jane",
        "family_name": "Customer",
        "phone": "+15555550100",
        "email": "jane@example.com",
    },
    "approval": {"confirmed": True, "token": "approve_opaque_adapter_token"},
    "verification_code": "123456",
}


def test_spec_booking_create_example_round_trips_unchanged() -> None:
    """The spec's booking.create example round-trips unchanged (OSBP spec, booking.create)."""
    parsed = BookingCreateInput.model_validate(SPEC_CREATE)
    assert parsed.to_wire() == SPEC_CREATE


def test_absent_optionals_are_omitted_not_null() -> None:
    """Absent optional fields never serialize as null (OSBP spec, Wire Format)."""
    slot = Slot(
        id="s1",
        organization_id="org",
        schedule_id="sch",
        service_id="svc",
        starts_at_local="2026-05-05T13:00:00",
        ends_at_local="2026-05-05T14:00:00",
    )
    wire = slot.to_wire()
    assert "starts_at" not in wire
    assert "null" not in slot.to_wire_json()
    assert set(wire) == {
        "id",
        "organization_id",
        "schedule_id",
        "service_id",
        "starts_at_local",
        "ends_at_local",
    }


def test_envelopes_have_the_spec_shapes() -> None:
    """Envelopes are {ok, value|problem, audit_event_id, osbp_runtime?} (OSBP spec, Result Envelope)."""
    ok = SuccessEnvelope[Receipt](value=Receipt(id="r", booking_id="b", text="t"), audit_event_id="aud_1")
    assert ok.to_wire() == {
        "ok": True,
        "value": {"id": "r", "booking_id": "b", "text": "t"},
        "audit_event_id": "aud_1",
    }
    bad = FailureEnvelope(
        problem=Problem(code="slot_taken", message="gone", retryable=True),
        audit_event_id="aud_2",
        osbp_runtime=RuntimeDiagnostics(idempotency="local_cache_replay", message="m"),
    )
    assert json.loads(bad.to_wire_json()) == {
        "ok": False,
        "problem": {"code": "slot_taken", "message": "gone", "retryable": True},
        "audit_event_id": "aud_2",
        "osbp_runtime": {"idempotency": "local_cache_replay", "message": "m"},
    }


@pytest.mark.parametrize(
    ("patch", "where"),
    [
        (
            {"mandate": {**SPEC_MANDATE, "max_price": {"amount_minor": "9500", "currency": "USD"}}},
            "amount_minor",
        ),
        ({"mandate": {**SPEC_MANDATE, "allow_policy_fee": "true"}}, "allow_policy_fee"),
        ({"approval": {"confirmed": "true", "token": "t"}}, "confirmed"),
        ({"approval": {"confirmed": False, "token": "t"}}, "confirmed"),
        ({"approval": {"confirmed": True}}, "token"),
        ({"surprise": 1}, "surprise"),
        ({"mandate": {**SPEC_MANDATE, "unknown_scope": []}}, "unknown_scope"),
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"customer": None}, "customer"),
        ({"mandate": {**SPEC_MANDATE, "allowed_actions": ["booking.cancel"]}}, "allowed_actions"),
        ({"provider_id": 7}, "provider_id"),
        (
            {"mandate": {**SPEC_MANDATE, "max_price": {"amount_minor": 2**53, "currency": "USD"}}},
            "amount_minor",
        ),
        ({"mandate": {**SPEC_MANDATE, "max_extra_fee": {"amount_minor": 10**30, "currency": "USD"}}}, "9007"),
        ({"customer": {"display_name": "Jane \ud800"}}, "customer.display_name"),
        ({"customer": {"\udc00": "x"}}, "a field name in customer"),
    ],
)
def test_strict_input_rejects_coercion_unknown_fields_and_nulls(patch: dict[str, Any], where: str) -> None:
    """Tool inputs reject unknown fields, coercion and explicit nulls (platform choice: strict inputs)."""
    with pytest.raises(ValidationError) as caught:
        BookingCreateInput.model_validate({**SPEC_CREATE, **patch})
    assert where in str(caught.value)


def test_validator_owned_mandate_defects_pass_the_schema() -> None:
    """A missing id, naked expires_at, empty provider_id are the validator's (OSBP spec, Problems)."""
    mandate = {k: v for k, v in SPEC_MANDATE.items() if k != "id"}
    mandate["expires_at"] = "2026-05-01T23:59:59"
    mandate["earliest_start"] = "2026-05-01T09:00:00Z"
    parsed = BookingCreateInput.model_validate({**SPEC_CREATE, "mandate": mandate, "provider_id": ""})
    assert parsed.mandate.id is None
    assert parsed.provider_id == ""


def test_required_fields_of_small_inputs() -> None:
    """availability.find needs date; handoff.request needs reason and message (OSBP spec, Tool Set: required
    fields)."""
    with pytest.raises(ValidationError):
        AvailabilityFindInput.model_validate({})
    with pytest.raises(ValidationError):
        HandoffRequestInput.model_validate({"reason": "x"})
    assert AvailabilityFindInput.model_validate({"date": "2026-05-05"}).date == "2026-05-05"


def test_amount_minor_is_bounded_by_the_largest_json_safe_integer() -> None:
    """RFC 7493 §2.2 and RFC 8785: 2**53 - 1 is the largest integer I-JSON carries and JCS hashes."""
    assert AMOUNT_MINOR_MAX == 9007199254740991
    assert Money(amount_minor=AMOUNT_MINOR_MAX, currency="JPY").amount_minor == AMOUNT_MINOR_MAX
    with pytest.raises(ValidationError, match="less than or equal to 9007199254740991"):
        Money(amount_minor=AMOUNT_MINOR_MAX + 1, currency="JPY")


def test_money_rejects_negative_amounts_and_lowercase_currency() -> None:
    """Money is {amount_minor?: integer >= 0, currency, type?, display?} (OSBP spec, Money)."""
    with pytest.raises(ValidationError):
        Money(amount_minor=-1, currency="USD")
    with pytest.raises(ValidationError):
        Money.model_validate({"currency": "usd"})
    wire = Money(currency="USD", type="quote_required").to_wire()
    assert wire == {"currency": "USD", "type": "quote_required"}


def test_service_example_validates() -> None:
    """The spec's service.describe value validates as Service (OSBP spec, service.describe)."""
    value = {
        "id": "service_123",
        "name": "Haircut",
        "duration": "PT60M",
        "price": {"amount_minor": 9500, "currency": "USD", "type": "fixed", "display": "$95.00"},
        "requires_consultation": False,
    }
    assert Service.model_validate(value).to_wire() == value


def test_approval_requires_literal_true() -> None:
    """approval is {confirmed: true, token} with both required (platform choice)."""
    assert Approval(confirmed=True, token="t").to_wire() == {"confirmed": True, "token": "t"}
