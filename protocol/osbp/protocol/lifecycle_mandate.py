"""The lifecycle extension's mandate rules (docs/lifecycle.md, "The mandate"), on top of booking.create's.

:func:`precheck_change` runs the steps that need no platform data, in order: well-formed (with the two new
caps fixed when present), not expired, the action allowed (``booking.create`` is not required), the
organization, then ``booking_ids``. A booking outside ``booking_ids`` answers exactly as an unknown id
(:data:`UNKNOWN_BOOKING`). :func:`check_new_slot` runs booking.create's own rules
(:func:`~osbp.protocol.mandate.validate_mandate`) on a reschedule's new slot, and :func:`check_fee` caps a
fee: unknown or not fixed fails closed with the terminal ``requires_user_confirmation``, as create does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from osbp.protocol.booking import unpriced_fees_problem
from osbp.protocol.lifecycle_models import LifecycleAction, LifecycleMandate
from osbp.protocol.mandate import V010_CAPS, check_mandate_head, validate_mandate
from osbp.protocol.models import Money, Problem, Service, Slot
from osbp.protocol.money import fixed_amount, format_display
from osbp.protocol.port import Offer
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem

__all__ = ["LIFECYCLE_CAPS", "UNKNOWN_BOOKING", "check_fee", "check_new_slot", "fee_cap", "precheck_change"]

#: Caps that must be fixed amounts when present: v0.1.0's and the extension's two.
LIFECYCLE_CAPS = (*V010_CAPS, "max_cancellation_fee", "max_reschedule_fee")

#: The one answer for a booking this caller may not change, whatever the reason: never says it exists.
UNKNOWN_BOOKING = problem(ProblemCode.BOOKING_NOT_FOUND)

FeeKind = Literal["cancellation", "reschedule"]
_EXCEEDS = {
    "cancellation": ExtensionCode.CANCELLATION_FEE_EXCEEDS_MANDATE,
    "reschedule": ExtensionCode.RESCHEDULE_FEE_EXCEEDS_MANDATE,
}


def precheck_change(
    mandate: LifecycleMandate,
    *,
    action: LifecycleAction,
    booking_id: str,
    organization_id: str,
    now: datetime,
) -> Problem | None:
    """The platform-free steps, in order: head, organization, ``booking_ids`` (see the module docstring)."""
    failed = check_mandate_head(mandate, now=now, action=action, caps=LIFECYCLE_CAPS)
    if failed is not None:
        return failed
    if mandate.organization_id != organization_id:
        return problem(ProblemCode.ORGANIZATION_NOT_ALLOWED)
    if mandate.booking_ids is not None and booking_id not in mandate.booking_ids:
        return UNKNOWN_BOOKING
    return None


def check_new_slot(
    mandate: LifecycleMandate, offer: Offer | Problem, *, provider_id: str, now: datetime
) -> tuple[Slot, Service] | Problem:
    """booking.create's checks, in its order, on the new slot: mandate rules, unpriced fees, offered."""
    if isinstance(offer, Problem):
        return offer
    if offer.service is None or offer.slot is None or offer.policy is None:
        if offer.not_offered is None:
            raise ValueError(
                "an Offer without a service must say why in not_offered (PlatformAdapter contract)"
            )
        return offer.not_offered
    failed = validate_mandate(
        mandate,
        slot=offer.slot,
        service=offer.service,
        policy=offer.policy,
        now=now,
        action="booking.reschedule",
    )
    if failed is not None:
        return failed
    if offer.unpriced_fees:
        return unpriced_fees_problem(offer.unpriced_fees)
    if not provider_id:
        return problem(ProblemCode.PROVIDER_UNKNOWN, "booking.reschedule needs the new slot's provider_id.")
    return offer.not_offered or (offer.slot, offer.service)


def fee_cap(mandate: LifecycleMandate, kind: FeeKind) -> Money:
    """The cap on ``kind``'s fee: the mandate's, else zero in ``max_price``'s currency (only free changes)."""
    cap = mandate.max_cancellation_fee if kind == "cancellation" else mandate.max_reschedule_fee
    if cap is not None:
        return cap
    currency = mandate.max_price.currency if mandate.max_price is not None else "XXX"
    return Money(amount_minor=0, currency=currency, type="fixed")


def _unconfirmable(reason: str) -> Problem:
    return problem(
        ProblemCode.REQUIRES_USER_CONFIRMATION,
        f"{reason} This change cannot be bounded by the mandate; explain this to the user and route to "
        "handoff.request. Do not retry as a final-confirmation challenge: there is no approval token.",
        retryable=False,
    )


def check_fee(
    mandate: LifecycleMandate, fee: Money | None, kind: FeeKind, *, when_free: str = ""
) -> Problem | None:
    """``None`` when ``fee`` is a fixed amount within the cap; else the refusal (``when_free`` ends it)."""
    cap = fee_cap(mandate, kind)
    cap_name = f"max_{kind}_fee"
    if fee is None:
        return _unconfirmable(f"The platform does not say what the {kind} fee is.")
    if fee.currency != cap.currency:
        return problem(
            ProblemCode.CURRENCY_MISMATCH,
            f"The {kind} fee is in {fee.currency} but BookingMandate.{cap_name} is in {cap.currency}; OSBP "
            "never converts currencies. Ask the user for a new approval.",
        )
    amount = fixed_amount(fee)
    if amount is None:
        return _unconfirmable(
            f"The {kind} fee has no fixed amount ({(fee.type or 'unknown').replace('_', ' ')})."
        )
    if cap.amount_minor is not None and amount > cap.amount_minor:
        message = (
            f"The {kind} fee {format_display(amount, fee.currency)} exceeds BookingMandate.{cap_name} "
            f"{format_display(cap.amount_minor, cap.currency)}."
        )
        return problem(_EXCEEDS[kind], f"{message} {when_free}".strip())
    return None
