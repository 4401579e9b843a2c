"""BookingMandate enforcement: ``validate_mandate`` runs every rule before any platform mutation.

The checks run in the spec's order ("Server Obligations → Mandate Enforcement") and the first failing rule
answers. Within each step the order is fixed as listed:

1. **Well-formed** → ``invalid_mandate``: ``id`` present and non-empty; ``expires_at`` present and an
   RFC 3339 instant with ``Z`` or an explicit offset (a naked wall-clock string is rejected); the other
   required fields present: ``allowed_actions``, ``organization_id``, ``earliest_start``, ``latest_end``
   and ``max_price`` (fail closed: a mandate without a window or a price cap bounds nothing). Caps
   (``max_price``, and ``max_extra_fee`` when present) must be fixed amounts.
2. **Not expired** → ``mandate_expired`` when ``expires_at`` is strictly before ``now`` (instant vs
   instant; at exactly ``expires_at`` the mandate still holds).
3. **Action** → ``action_not_allowed`` unless the action (``booking.create``) is in ``allowed_actions``.
4. **Scope**, organization → service → schedule → provider: ``organization_not_allowed`` (the slot's and,
   when present, the policy's organization must be the mandate's), ``service_not_allowed``,
   ``schedule_not_allowed``, then ``provider_unknown`` when ``provider_ids`` is present but the slot has no
   (or an empty) provider id, else ``provider_not_allowed``. An absent id list allows any id; a present
   empty list allows none.
5. **Time** → ``invalid_mandate`` when ``earliest_start``/``latest_end`` or the slot's
   ``starts_at_local``/``ends_at_local`` are not offset-free wall-clock strings, or the slot's
   ``starts_at``/``ends_at`` (when present) are not instants with an offset; then ``slot_too_early`` when the
   slot starts before ``earliest_start`` and ``slot_too_late`` when it ends after ``latest_end``. The window
   is compared as merchant wall-clock against wall-clock (never through the host's zone); both ends are
   inclusive.
6. **Price** (the slot's price, else the service's): none at all → ``requires_user_confirmation``;
   a currency other than ``max_price.currency`` → ``currency_mismatch``; no fixed amount →
   ``requires_user_confirmation``; an amount above ``max_price.amount_minor`` → ``price_exceeds_mandate``
   (equal passes).
7. **Consultation** → ``requires_consultation_handoff`` when the service requires it.
8. **Payment** by ``policy.payment_requirement``: ``none`` passes (unless the policy still reports a
   non-zero or non-fixed deposit, which is treated as ``deposit``); ``unknown`` →
   ``requires_user_confirmation``; ``deposit`` / ``full_prepay`` → ``requires_payment_handoff`` unless
   ``allow_policy_fee`` is true; the required amount (``policy.deposit``, for ``full_prepay`` falling back
   to the price) must be fixed (else ``requires_user_confirmation``); when ``max_extra_fee`` is present it
   must be the same currency (else ``currency_mismatch``) and cover the amount (else
   ``policy_fee_exceeds_mandate``; equal passes).

Steps 1–4, the shape of the requested date and time and the ``earliest_start`` bound need no platform data:
:func:`precheck_mandate` runs exactly those, in the same order, so they answer before any platform request
(an expired mandate is ``mandate_expired`` even while the platform is down). :func:`validate_mandate` then
runs every step on the resolved facts; a booking that passed the pre-check meets the same first steps again.

Every ``requires_user_confirmation`` from here is the fail-closed form: not retryable, no approval token.
Cancellation and no-show fees are disclosed in the approval summary but, as the spec says, not capped by
the mandate. Final confirmation and idempotency (the spec's last two obligations) live in
:mod:`osbp.protocol.approval` and :mod:`osbp.protocol.idempotency`.
"""

from __future__ import annotations

from datetime import datetime

from osbp.protocol.models import BookingCreateInput, BookingMandate, Money, Policy, Problem, Service, Slot
from osbp.protocol.money import fixed_amount, format_display
from osbp.protocol.problems import ProblemCode, problem
from osbp.protocol.timeutil import combine_wall_clock, has_offset, parse_instant, parse_wall_clock

__all__ = [
    "V010_CAPS",
    "check_mandate_head",
    "check_requested_wall_clock",
    "precheck_mandate",
    "validate_mandate",
]

#: The v0.1.0 caps that must be fixed amounts when present (an extension names more).
V010_CAPS = ("max_price", "max_extra_fee")


#: Why a payment the policy requires cannot be bounded: the policy names no fixed amount for it.
_UNKNOWN_PAYMENT = "The required payment amount for this booking is unknown."


def _invalid(reason: str) -> Problem:
    return problem(ProblemCode.INVALID_MANDATE, f"BookingMandate is invalid: {reason}.")


def _unconfirmable(reason: str) -> Problem:
    return problem(
        ProblemCode.REQUIRES_USER_CONFIRMATION,
        f"{reason} This booking cannot be bounded by the mandate; explain this to the user and route to "
        "handoff.request. Do not retry as a final-confirmation challenge: there is no approval token.",
        retryable=False,
    )


def _well_formed(mandate: BookingMandate, caps: tuple[str, ...] = V010_CAPS) -> Problem | None:
    if not mandate.id:
        return _invalid("id is missing")
    if not mandate.expires_at:
        return _invalid("expires_at is missing")
    if parse_instant(mandate.expires_at) is None:
        return _invalid("expires_at must be an RFC 3339 instant with Z or an explicit UTC offset")
    missing = [
        name
        for name in ("allowed_actions", "organization_id", "earliest_start", "latest_end", "max_price")
        if getattr(mandate, name) in (None, "")
    ]
    if missing:
        return _invalid(f"required field(s) missing: {', '.join(missing)}")
    for name in caps:
        cap: Money | None = getattr(mandate, name)
        if cap is not None and fixed_amount(cap) is None:
            return _invalid(f"{name} must be a fixed amount_minor")
    return None


def _scope(
    mandate: BookingMandate,
    *,
    organizations: set[str],
    service_id: str,
    schedule_id: str,
    provider_id: str | None,
) -> Problem | None:
    if organizations != {mandate.organization_id}:
        return problem(ProblemCode.ORGANIZATION_NOT_ALLOWED)
    if mandate.service_ids is not None and service_id not in mandate.service_ids:
        return problem(ProblemCode.SERVICE_NOT_ALLOWED)
    if mandate.schedule_ids is not None and schedule_id not in mandate.schedule_ids:
        return problem(ProblemCode.SCHEDULE_NOT_ALLOWED)
    if mandate.provider_ids is not None:
        if not provider_id:
            return problem(ProblemCode.PROVIDER_UNKNOWN)
        if provider_id not in mandate.provider_ids:
            return problem(ProblemCode.PROVIDER_NOT_ALLOWED)
    return None


def _slot_scope(mandate: BookingMandate, slot: Slot, policy: Policy) -> Problem | None:
    organizations = {slot.organization_id}
    if policy.organization is not None:
        organizations.add(policy.organization.id)
    return _scope(
        mandate,
        organizations=organizations,
        service_id=slot.service_id,
        schedule_id=slot.schedule_id,
        provider_id=slot.provider_id,
    )


def _wall_clock(name: str, value: str | None) -> datetime | Problem:
    if value is None:
        return _invalid(f"{name} is missing")
    if has_offset(value):
        return _invalid(f"{name} is a merchant wall-clock value and must not carry Z or a UTC offset")
    parsed = parse_wall_clock(value)
    if parsed is None:
        return _invalid(f"{name} must be a wall-clock string like 2026-05-05T13:00:00")
    return parsed


def _mandate_window(mandate: BookingMandate) -> tuple[datetime, datetime] | Problem:
    earliest = _wall_clock("earliest_start", mandate.earliest_start)
    if isinstance(earliest, Problem):
        return earliest
    latest = _wall_clock("latest_end", mandate.latest_end)
    if isinstance(latest, Problem):
        return latest
    return earliest, latest


def _too_early(
    mandate: BookingMandate, starts_at_local: str, start: datetime, earliest: datetime
) -> Problem | None:
    if start < earliest:
        return problem(
            ProblemCode.SLOT_TOO_EARLY,
            f"The slot starts at {starts_at_local} (merchant time), before "
            f"BookingMandate.earliest_start {mandate.earliest_start}.",
        )
    return None


def _window(mandate: BookingMandate, slot: Slot) -> Problem | None:
    bounds = _mandate_window(mandate)
    if isinstance(bounds, Problem):
        return bounds
    earliest, latest = bounds
    start = _wall_clock("slot starts_at_local", slot.starts_at_local)
    if isinstance(start, Problem):
        return start
    end = _wall_clock("slot ends_at_local", slot.ends_at_local)
    if isinstance(end, Problem):
        return end
    for name, instant in (("starts_at", slot.starts_at), ("ends_at", slot.ends_at)):
        if instant is not None and parse_instant(instant) is None:
            return _invalid(f"slot {name} must be an RFC 3339 instant with Z or an explicit UTC offset")
    if early := _too_early(mandate, slot.starts_at_local, start, earliest):
        return early
    if end > latest:
        return problem(
            ProblemCode.SLOT_TOO_LATE,
            f"The slot ends at {slot.ends_at_local} (merchant time), after BookingMandate.latest_end "
            f"{mandate.latest_end}.",
        )
    return None


def _price(mandate: BookingMandate, slot: Slot, service: Service) -> Problem | None:
    cap = mandate.max_price
    if cap is None or cap.amount_minor is None:  # unreachable: _well_formed requires a fixed cap
        return _invalid("max_price must be a fixed amount_minor")
    price = slot.price or service.price
    if price is None:
        return _unconfirmable("The selected service and slot report no price.")
    # Both the slot's and the service's price are checked: either in another currency fails closed.
    for quoted in (slot.price, service.price):
        if quoted is not None and quoted.currency != cap.currency:
            return problem(
                ProblemCode.CURRENCY_MISMATCH,
                f"The selected price is in {quoted.currency} but BookingMandate.max_price is in "
                f"{cap.currency}; OSBP never converts currencies. Ask the user for a new approval.",
            )
    amount = fixed_amount(price)
    if amount is None:
        kind = (price.type or "unknown").replace("_", " ")
        return _unconfirmable(f"The selected price has no fixed amount ({kind}).")
    if amount > cap.amount_minor:
        return problem(
            ProblemCode.PRICE_EXCEEDS_MANDATE,
            # Both amounts are fixed and in range (the schema bounds them) in a currency the platform
            # priced in, so each has a display form.
            f"Selected service or slot price {format_display(amount, price.currency)} exceeds "
            f"BookingMandate.max_price {format_display(cap.amount_minor, cap.currency)}.",
        )
    return None


def _payment(mandate: BookingMandate, slot: Slot, service: Service, policy: Policy) -> Problem | None:
    requirement = policy.payment_requirement
    deposit = policy.deposit
    if requirement == "none" and deposit is not None and fixed_amount(deposit) != 0:
        requirement = "deposit"  # the policy contradicts itself: fail closed on the stricter reading
    if requirement == "none":
        return None
    if requirement == "unknown":
        return _unconfirmable("The merchant's payment requirement for this booking is unknown.")
    if not mandate.allow_policy_fee:
        what = "a deposit" if requirement == "deposit" else "full payment in advance"
        return problem(
            ProblemCode.REQUIRES_PAYMENT_HANDOFF,
            f"This booking requires {what}, which the BookingMandate does not allow (allow_policy_fee is not "
            "true). OSBP does not collect payment; route to handoff.request.",
        )
    required = deposit
    if requirement == "full_prepay" and (required is None or not required.amount_minor):
        # Full prepayment is the price unless the policy names a (non-zero) amount; the approval summary
        # shows the same amount.
        required = slot.price or service.price
    if required is None:
        return _unconfirmable(_UNKNOWN_PAYMENT)
    required_amount = fixed_amount(required)
    if required_amount is None:
        return _unconfirmable(_UNKNOWN_PAYMENT)
    cap = mandate.max_extra_fee
    # Without a fee cap the amount is allowed by allow_policy_fee alone, but never in another currency.
    reference, reference_name = (
        (cap, "max_extra_fee") if cap is not None else (mandate.max_price, "max_price")
    )
    if reference is not None and required.currency != reference.currency:
        return problem(
            ProblemCode.CURRENCY_MISMATCH,
            f"The required payment is in {required.currency} but BookingMandate.{reference_name} is in "
            f"{reference.currency}; OSBP never converts currencies. Ask the user for a new approval.",
        )
    if cap is None:
        return None
    # _well_formed made the cap fixed; both amounts are in range and in the platform's currency.
    if cap.amount_minor is not None and required_amount > cap.amount_minor:
        return problem(
            ProblemCode.POLICY_FEE_EXCEEDS_MANDATE,
            f"The required payment {format_display(required_amount, required.currency)} exceeds "
            f"BookingMandate.max_extra_fee {format_display(cap.amount_minor, cap.currency)}.",
        )
    return None


def _head(
    mandate: BookingMandate, *, now: datetime, action: str, caps: tuple[str, ...] = V010_CAPS
) -> Problem | None:
    """Steps 1-3: well-formed, not expired, the action allowed."""
    failed = _well_formed(mandate, caps)
    if failed:
        return failed
    expires_at = parse_instant(mandate.expires_at or "")
    if expires_at is None:  # unreachable: _well_formed parsed it
        return _invalid("expires_at must be an RFC 3339 instant")
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("validate_mandate needs an aware 'now' (instants compare only with instants)")
    if expires_at < now:
        return problem(ProblemCode.MANDATE_EXPIRED, f"BookingMandate expired at {mandate.expires_at}.")
    if action not in (mandate.allowed_actions or []):
        return problem(ProblemCode.ACTION_NOT_ALLOWED, f"{action} is not in BookingMandate.allowed_actions.")
    return None


def check_mandate_head(
    mandate: BookingMandate, *, now: datetime, action: str, caps: tuple[str, ...] = V010_CAPS
) -> Problem | None:
    """Steps 1-3 alone (well-formed with every cap in ``caps`` fixed, not expired, ``action`` allowed)."""
    return _head(mandate, now=now, action=action, caps=caps)


def validate_mandate(
    mandate: BookingMandate,
    *,
    slot: Slot,
    service: Service,
    policy: Policy,
    now: datetime,
    action: str = "booking.create",
) -> Problem | None:
    """The first mandate rule the resolved booking breaks (in the spec's order), or ``None``."""
    # `or` short-circuits: the first failing step answers and the later ones never run.
    return (
        _head(mandate, now=now, action=action)
        or _slot_scope(mandate, slot, policy)
        or _window(mandate, slot)
        or _price(mandate, slot, service)
        or (problem(ProblemCode.REQUIRES_CONSULTATION_HANDOFF) if service.requires_consultation else None)
        or _payment(mandate, slot, service, policy)
    )


def precheck_mandate(
    inp: BookingCreateInput, *, organization_id: str, now: datetime, action: str = "booking.create"
) -> str | Problem:
    """The mandate steps that need no platform data, in the spec's order: the requested start, or a Problem.

    Well-formed, not expired, action, scope (the request's organization is the one this adapter serves,
    its ids are the create-ready ids), then the wall-clock step as far as the request alone decides it:
    the mandate window's shape, the requested date and time's shape, and the ``earliest_start`` bound.
    On success the merchant-local start (``2026-05-05T13:00:00``) is returned for the platform steps.
    """
    mandate = inp.mandate
    failed = _head(mandate, now=now, action=action) or _scope(
        mandate,
        organizations={organization_id},
        service_id=inp.service_id,
        schedule_id=inp.schedule_id,
        provider_id=inp.provider_id,
    )
    if failed:
        return failed
    bounds = _mandate_window(mandate)
    if isinstance(bounds, Problem):
        return bounds
    start_local = check_requested_wall_clock(inp.date, inp.time)
    if isinstance(start_local, Problem):
        return start_local
    start = parse_wall_clock(start_local)
    if start is None:  # unreachable: check_requested_wall_clock formatted it
        return _invalid("booking.create date and time are not a wall-clock value")
    return _too_early(mandate, start_local, start, bounds[0]) or start_local


def check_requested_wall_clock(date: str, time: str) -> str | Problem:
    """booking.create ``date`` + ``time`` as one wall-clock string, or ``invalid_mandate``."""
    if has_offset(f"{date}T{time}"):
        return _invalid("booking.create date and time are merchant wall-clock values without an offset")
    combined = combine_wall_clock(date, time)
    if combined is None:
        return _invalid("booking.create date must be YYYY-MM-DD and time HH:MM (merchant wall-clock)")
    return combined
