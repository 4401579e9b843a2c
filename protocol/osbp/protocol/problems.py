"""The OSBP v0.1.0 Problem codes, the one table of them, and small constructors with default messages.

``ProblemCode`` holds the spec's protocol-meaningful set (its "codes in use" table), ``ExtensionCode`` the
codes this implementation answers beside it. A plug-in adapter may emit codes of its own; :func:`problem`
accepts any string code for that. Messages are explanatory English prose, never a parsing target, and
never carry raw upstream bodies.
"""

from __future__ import annotations

from enum import StrEnum

from osbp.protocol.models import Problem

__all__ = [
    "ALL_CODES",
    "DEFAULT_MESSAGES",
    "RETRYABLE_CODES",
    "ExtensionCode",
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


class ExtensionCode(StrEnum):
    """The codes this implementation answers beside the spec's table (the spec allows them), by who answers.

    Every module that answers or tests for one of these names the member; none spells the string again.
    """

    # The protocol core.
    #: The platform could not be reached (5xx, timeout, refused connection): retryable.
    UPSTREAM_UNAVAILABLE = "upstream_unavailable"
    #: booking.create without the customer's name or a contact, which the core requires before approval.
    INVALID_CUSTOMER = "invalid_customer"
    #: The platform answered with a value OSBP cannot represent exactly: fail closed, not retryable.
    UNTRANSLATABLE_PLATFORM_DATA = "untranslatable_platform_data"
    #: Another call with this idempotency key is still in flight (retryable).
    IDEMPOTENCY_IN_PROGRESS = "idempotency_in_progress"
    #: ``place_booking``'s answer when the platform refused the create because a fact the offer's validator
    #: covers changed (no appointment was made). Port-internal: the core resolves again, never returns it.
    OFFER_CHANGED = "offer_changed"
    #: The user did not answer the host's confirmation request in time (retryable: nothing was booked).
    CONFIRMATION_TIMEOUT = "confirmation_timeout"
    #: The retry came before the user answered the confirmation page (retryable: nothing was booked).
    CONFIRMATION_PENDING = "confirmation_pending"
    #: The host could not ask the user (it failed, or it cannot elicit while the operator requires it).
    CONFIRMATION_UNAVAILABLE = "confirmation_unavailable"
    # The reference adapter.
    #: A setting the adapter needs is missing.
    MISSING_CONFIG = "missing_config"
    #: Arguments that fail the tool's input schema (the server), or input the core refuses before any
    #: platform call (availability.find's date or earliest_start).
    INVALID_INPUT = "invalid_input"
    #: The verification purpose is not ``booking:{organization_id}``.
    INVALID_VERIFICATION_PURPOSE = "invalid_verification_purpose"
    #: The platform offers no customer verification.
    VERIFICATION_NOT_SUPPORTED = "verification_not_supported"
    #: The platform cannot verify a customer before the booking's create.
    PRE_VERIFICATION_NOT_SUPPORTED = "pre_verification_not_supported"
    #: The platform does not know the configured organization (a configuration error).
    ORGANIZATION_NOT_FOUND = "organization_not_found"
    #: The platform has no such service for this organization.
    SERVICE_NOT_FOUND = "service_not_found"
    #: The platform has no such schedule for this organization.
    SCHEDULE_NOT_FOUND = "schedule_not_found"
    #: The platform has no such provider for this organization.
    PROVIDER_NOT_FOUND = "provider_not_found"
    #: The provider does not offer this service at this schedule.
    PROVIDER_NOT_ELIGIBLE = "provider_not_eligible"
    # The MCP server.
    #: A ``tools/call`` naming a tool this server does not offer.
    UNKNOWN_TOOL = "unknown_tool"
    #: A call whose audit record could not be written before anything changed (a read's record, an
    #: effect's intent): its answer is withheld, and it is retryable, since nothing changed.
    AUDIT_UNAVAILABLE = "audit_unavailable"
    # The lifecycle extension (docs/lifecycle.md, its table version 0.1), answered by the protocol core.
    #: The appointment is completed, a no-show, has started, or (cancel only) was cancelled by the merchant.
    BOOKING_NOT_CANCELLABLE = "booking_not_cancellable"
    #: The appointment has started or is no longer active.
    BOOKING_NOT_RESCHEDULABLE = "booking_not_reschedulable"
    #: The cancellation fee that applies now is above ``max_cancellation_fee``.
    CANCELLATION_FEE_EXCEEDS_MANDATE = "cancellation_fee_exceeds_mandate"
    #: The platform's reschedule fee is above ``max_reschedule_fee``.
    RESCHEDULE_FEE_EXCEEDS_MANDATE = "reschedule_fee_exceeds_mandate"
    #: The appointment changed on the platform between read and write (retryable: a fresh challenge).
    BOOKING_CHANGED = "booking_changed"


#: Every code this implementation answers: the spec's table, then the extensions.
ALL_CODES: tuple[str, ...] = (*ProblemCode, *ExtensionCode)


#: Codes the spec (and the lifecycle extension's table) marks retryable. ``requires_user_confirmation`` is
#: retryable only in its challenge form (see :mod:`osbp.protocol.approval`); its fail-closed validator form
#: is not, so it is absent here.
RETRYABLE_CODES: frozenset[str] = frozenset(
    {
        ProblemCode.REQUIRES_VERIFICATION,
        ProblemCode.SLOT_TAKEN,
        ProblemCode.RATE_LIMITED,
        ExtensionCode.BOOKING_CHANGED,
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
