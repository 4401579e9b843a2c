"""Problem codes and constructors."""

from __future__ import annotations

from osbp.protocol.problems import DEFAULT_MESSAGES, ProblemCode, problem

SPEC_TABLE = [
    "invalid_mandate",
    "mandate_expired",
    "action_not_allowed",
    "organization_not_allowed",
    "service_not_allowed",
    "schedule_not_allowed",
    "provider_unknown",
    "provider_not_allowed",
    "slot_too_early",
    "slot_too_late",
    "price_exceeds_mandate",
    "policy_fee_exceeds_mandate",
    "currency_mismatch",
    "requires_payment_handoff",
    "requires_consultation_handoff",
    "requires_user_confirmation",
    "requires_verification",
    "verification_failed",
    "slot_taken",
    "idempotency_conflict",
    "booking_not_found",
    "booking_status_requires_verification",
    "rate_limited",
    "internal_adapter_error",
]


def test_codes_are_exactly_the_spec_table() -> None:
    """ProblemCode is the spec's protocol-meaningful set, in order (OSBP spec, Result Envelope)."""
    assert [c.value for c in ProblemCode] == SPEC_TABLE
    assert set(DEFAULT_MESSAGES) == set(ProblemCode)


def test_retryable_defaults_follow_the_spec() -> None:
    """slot_taken, requires_verification and rate_limited are retryable; the rest are not (OSBP spec)."""
    retryable = {c.value for c in ProblemCode if problem(c).retryable}
    assert retryable == {"slot_taken", "requires_verification", "rate_limited"}
    assert problem("requires_user_confirmation").retryable is False


def test_adapter_specific_codes_are_allowed() -> None:
    """Adapters may emit additional codes (OSBP spec, Problem table)."""
    custom = problem("missing_config", "OSBP_BACKEND_URL is not set.", retryable=False)
    assert custom.to_wire() == {
        "code": "missing_config",
        "message": "OSBP_BACKEND_URL is not set.",
        "retryable": False,
    }
    assert problem(ProblemCode.PRICE_EXCEEDS_MANDATE).message.startswith("Selected service or slot price")
