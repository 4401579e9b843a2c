"""The OSBP v0.1.0 Problem codes and small constructors with sensible default messages.

``ProblemCode`` holds the spec's protocol-meaningful set (its "codes in use" table). Adapters may emit
additional adapter-specific codes; :func:`problem` accepts any string code for that. Messages are
explanatory English prose, never a parsing target, and never carry raw upstream bodies.
"""

from __future__ import annotations

from enum import StrEnum

from osbp.protocol.models import Problem

__all__ = [
    "DEFAULT_MESSAGES",
    "INVALID_CUSTOMER",
    "RETRYABLE_CODES",
    "UNTRANSLATABLE_PLATFORM_DATA",
    "UPSTREAM_UNAVAILABLE",
    "ProblemCode",
    "problem",
]


class ProblemCode(StrEnum):
    """The protocol-meaningful Problem codes of OSBP v0.1.0, in the spec's table order."""

    INVALID_MANDATE = "invalid_mandate"
    MANDATE_EXPIRED = "mandate_expired"
    ACTION_NOT_ALLOWED = "action_not_allowed"
    ORGANIZATION_NOT_ALLOWED = "organization_not_allowed"
    SERVICE_NOT_ALLOWED = "service_not_allowed"
    SCHEDULE_NOT_ALLOWED = "schedule_not_allowed"
    PROVIDER_UNKNOWN = "provider_unknown"
    PROVIDER_NOT_ALLOWED = "provider_not_allowed"
    SLOT_TOO_EARLY = "slot_too_early"
    SLOT_TOO_LATE = "slot_too_late"
    PRICE_EXCEEDS_MANDATE = "price_exceeds_mandate"
    POLICY_FEE_EXCEEDS_MANDATE = "policy_fee_exceeds_mandate"
    CURRENCY_MISMATCH = "currency_mismatch"
    REQUIRES_PAYMENT_HANDOFF = "requires_payment_handoff"
    REQUIRES_CONSULTATION_HANDOFF = "requires_consultation_handoff"
    REQUIRES_USER_CONFIRMATION = "requires_user_confirmation"
    REQUIRES_VERIFICATION = "requires_verification"
    VERIFICATION_FAILED = "verification_failed"
    SLOT_TAKEN = "slot_taken"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    BOOKING_NOT_FOUND = "booking_not_found"
    BOOKING_STATUS_REQUIRES_VERIFICATION = "booking_status_requires_verification"
    RATE_LIMITED = "rate_limited"
    INTERNAL_ADAPTER_ERROR = "internal_adapter_error"


# Extension codes the protocol core itself answers (the spec allows codes beside its table).
#: The platform could not be reached (5xx, timeout, refused connection): retryable.
UPSTREAM_UNAVAILABLE = "upstream_unavailable"
#: booking.create without the customer's name or a contact, which the core requires before approval.
INVALID_CUSTOMER = "invalid_customer"
#: The platform answered with a value OSBP cannot represent exactly: fail closed, not retryable.
UNTRANSLATABLE_PLATFORM_DATA = "untranslatable_platform_data"


#: Codes the spec marks retryable. ``requires_user_confirmation`` is retryable only in its challenge form
#: (see :mod:`osbp.protocol.approval`); its fail-closed validator form is not, so it is absent here.
RETRYABLE_CODES: frozenset[str] = frozenset(
    {
        ProblemCode.REQUIRES_VERIFICATION,
        ProblemCode.SLOT_TAKEN,
        ProblemCode.RATE_LIMITED,
    }
)

DEFAULT_MESSAGES: dict[ProblemCode, str] = {
    ProblemCode.INVALID_MANDATE: "BookingMandate is missing required fields, expires_at lacks an explicit "
    "timezone, or a wall-clock field carries an offset.",
    ProblemCode.MANDATE_EXPIRED: "BookingMandate.expires_at is in the past; ask the user for a new mandate.",
    ProblemCode.ACTION_NOT_ALLOWED: "This tool is not in BookingMandate.allowed_actions.",
    ProblemCode.ORGANIZATION_NOT_ALLOWED: "The organization is outside the BookingMandate scope.",
    ProblemCode.SERVICE_NOT_ALLOWED: "The service is outside BookingMandate.service_ids.",
    ProblemCode.SCHEDULE_NOT_ALLOWED: "The schedule is outside BookingMandate.schedule_ids.",
    ProblemCode.PROVIDER_UNKNOWN: "The slot does not identify the provider that BookingMandate.provider_ids "
    "requires.",
    ProblemCode.PROVIDER_NOT_ALLOWED: "The provider is outside BookingMandate.provider_ids.",
    ProblemCode.SLOT_TOO_EARLY: "The slot starts before BookingMandate.earliest_start.",
    ProblemCode.SLOT_TOO_LATE: "The slot ends after BookingMandate.latest_end.",
    ProblemCode.PRICE_EXCEEDS_MANDATE: "Selected service or slot price exceeds BookingMandate.max_price.",
    ProblemCode.POLICY_FEE_EXCEEDS_MANDATE: "The required payment or policy fee exceeds "
    "BookingMandate.max_extra_fee.",
    ProblemCode.CURRENCY_MISMATCH: "The selected price currency does not match the BookingMandate cap "
    "currency; OSBP never converts currencies. Ask the user for a new approval.",
    ProblemCode.REQUIRES_PAYMENT_HANDOFF: "This booking requires a payment or deposit that the "
    "BookingMandate does not allow; route to handoff.request.",
    ProblemCode.REQUIRES_CONSULTATION_HANDOFF: "This service requires a consultation or quote workflow "
    "that OSBP v0.1.0 cannot drive; route to handoff.request.",
    ProblemCode.REQUIRES_USER_CONFIRMATION: "The payment requirement or amount is unknown, so this booking "
    "cannot be safely bounded by the mandate; explain this to the user and route to handoff.request.",
    ProblemCode.REQUIRES_VERIFICATION: "The platform requires customer verification before booking: call "
    "verification.send, ask the customer for the code, then retry booking.create with the same "
    "idempotency_key, approval and verification_code.",
    ProblemCode.VERIFICATION_FAILED: "The verification code was rejected (wrong or expired); call "
    "verification.send again and retry booking.create with the new code.",
    ProblemCode.SLOT_TAKEN: "The selected slot is no longer available; find another slot.",
    ProblemCode.IDEMPOTENCY_CONFLICT: "This idempotency_key was already used with a different booking "
    "payload; use a fresh key for a new booking attempt.",
    ProblemCode.BOOKING_NOT_FOUND: "No appointment matches the status query.",
    ProblemCode.BOOKING_STATUS_REQUIRES_VERIFICATION: "Appointment history is gated behind a verification "
    "step that read tools cannot complete; rely on the booking.create receipt or hand off.",
    ProblemCode.RATE_LIMITED: "The booking platform is rate limiting requests; back off and retry.",
    ProblemCode.INTERNAL_ADAPTER_ERROR: "The adapter failed unexpectedly; the failure was recorded.",
}


def problem(code: ProblemCode | str, message: str | None = None, *, retryable: bool | None = None) -> Problem:
    """Build a Problem; ``message`` and ``retryable`` default from the spec's table for known codes."""
    known = code if isinstance(code, ProblemCode) else _lookup(code)
    if message is None:
        message = DEFAULT_MESSAGES[known] if known is not None else str(code)
    if retryable is None:
        retryable = str(code) in RETRYABLE_CODES
    return Problem(code=str(code), message=message, retryable=retryable)


def _lookup(code: str) -> ProblemCode | None:
    try:
        return ProblemCode(code)
    except ValueError:
        return None
