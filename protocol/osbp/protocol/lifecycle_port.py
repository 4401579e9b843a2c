"""The lifecycle port: what an adapter implements, beside :class:`~osbp.protocol.port.PlatformAdapter`, to
serve booking.cancel and booking.reschedule (docs/lifecycle.md).

Three methods, each returning its value or a :class:`~osbp.protocol.models.Problem`, raising only for bugs:

* :meth:`LifecyclePort.quote_change` reads, with no platform write, what a change of the appointment costs
  *now* on the platform clock, its version and its current slot (:class:`ChangeQuote`); an unknown id is
  ``booking_not_found``;
* :meth:`LifecyclePort.cancel` and :meth:`LifecyclePort.reschedule` make the change only if the appointment
  is still at ``expected_version`` (else ``booking_changed``), idempotently per ``idempotency_key`` (a
  retry after any outcome never changes it twice), and answer a code of
  :data:`~osbp.protocol.port.OUTCOME_UNKNOWN` whenever the change may have been made; any other Problem
  promises that nothing changed. A reschedule is one platform transaction: the new time taken and the old
  one released, or nothing (``slot_taken`` when the new slot is gone).

The new slot's facts come from the existing :meth:`~osbp.protocol.port.PlatformAdapter.resolve_booking`, so
the core checks them with booking.create's own rules. Every rule around the port is the core's
(:mod:`osbp.protocol.lifecycle`): an adapter never validates a mandate and never sees an unapproved change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from osbp.protocol.models import Booking, BookingStatus, Customer, Money, Problem
from osbp.protocol.port import PlatformAdapter

__all__ = [
    "CancelRequest",
    "ChangeQuote",
    "ChangeRequest",
    "ChangedBooking",
    "CurrentSlot",
    "LifecycleAdapter",
    "LifecyclePort",
    "RescheduleRequest",
]


@dataclass(frozen=True, slots=True)
class CurrentSlot:
    """Where the appointment is now, as the platform reports it (what the user is shown)."""

    service_id: str
    service_name: str
    schedule_id: str
    starts_at_local: str
    ends_at_local: str
    provider_id: str | None = None
    provider_name: str | None = None
    starts_at: str | None = None
    ends_at: str | None = None
    schedule_timezone: str | None = None
    #: The appointment's price (the reschedule summary states the difference to the new slot's).
    price: Money | None = None


@dataclass(frozen=True, slots=True)
class ChangeQuote:
    """What changing one appointment means now, on the platform clock."""

    booking_id: str
    organization_id: str
    status: BookingStatus
    #: The platform's version of the appointment (its ETag): every write sends it back.
    version: str
    slot: CurrentSlot
    #: Whether a cancel is possible now (booked, not started, not cancelled by the merchant).
    cancellable: bool
    #: Whether a reschedule is possible now (active, not started).
    reschedulable: bool
    #: The cancellation fee that applies now; ``None``: the platform cannot say (fails closed).
    cancellation_fee: Money | None
    #: The reschedule fee; ``None``: the platform cannot say (fails closed).
    reschedule_fee: Money | None
    #: The instant (RFC 3339) from which the cancellation fee applies, when there is a later fee.
    fee_applies_from: str | None = None
    #: Why the fee applies now, in prose ("inside the 6-hour late-cancellation window").
    fee_reason: str | None = None
    #: The cancellation fee from ``fee_applies_from`` on (the summary says what free-until saves).
    late_cancellation_fee: Money | None = None


@dataclass(frozen=True, slots=True)
class ChangeRequest:
    """Which appointment a quote is for, and for whom."""

    booking_id: str
    customer: Customer | None = None


@dataclass(frozen=True, slots=True)
class CancelRequest:
    """One approved cancel: idempotent per ``idempotency_key``, only at ``expected_version``."""

    booking_id: str
    idempotency_key: str
    expected_version: str
    customer: Customer | None = None


@dataclass(frozen=True, slots=True)
class RescheduleRequest:
    """One approved reschedule to the new slot (merchant-local start), as :class:`CancelRequest`."""

    booking_id: str
    idempotency_key: str
    expected_version: str
    schedule_id: str
    provider_id: str
    starts_at_local: str
    customer: Customer | None = None
    #: The new slot's offer validator, when the platform gave one (see :class:`~osbp.protocol.port.Offer`).
    validator: str | None = None
    verification_code: str | None = None


@dataclass(frozen=True, slots=True)
class ChangedBooking:
    """The appointment after the change, and the fee the platform charged for it."""

    booking: Booking
    fee: Money


@runtime_checkable
class LifecyclePort(Protocol):
    """The three lifecycle methods an adapter adds (see the module docstring)."""

    async def quote_change(self, request: ChangeRequest) -> ChangeQuote | Problem:
        """The appointment's change quote now; no platform write."""
        ...

    async def cancel(self, request: CancelRequest) -> ChangedBooking | Problem:
        """Cancel at ``expected_version``, idempotent per ``idempotency_key``."""
        ...

    async def reschedule(self, request: RescheduleRequest) -> ChangedBooking | Problem:
        """Move to the new slot in one transaction at ``expected_version``, idempotent per key."""
        ...


@runtime_checkable
class LifecycleAdapter(PlatformAdapter, LifecyclePort, Protocol):
    """A platform adapter that serves the lifecycle extension too."""
