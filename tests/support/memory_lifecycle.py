"""The in-memory platform with the lifecycle port too: quotes, cancels and reschedules on its own clock.

A faithful model of the platform side of docs/lifecycle.md: each appointment has a version that every
change raises, writes are refused at another version (``booking_changed``), each write is idempotent per
key (a retry answers the change it made), the cancellation fee applies inside the late window before the
start, and a reschedule takes a free, offered slot and releases the old one in one step, or changes
nothing (``slot_taken``). Every booking rule stays the protocol core's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from osbp.protocol.lifecycle_port import (
    CancelRequest,
    ChangedBooking,
    ChangeQuote,
    ChangeRequest,
    CurrentSlot,
    RescheduleRequest,
)
from osbp.protocol.models import Booking, Money, Problem
from osbp.protocol.port import BookingRequest
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.timeutil import format_instant, parse_instant
from tests.support.memory_adapter import ORG, PROVIDER, SCHEDULE, MemoryAdapter

__all__ = ["LATE_FEE", "MemoryLifecycleAdapter", "usd"]


def usd(amount_minor: int) -> Money:
    """A fixed US dollar amount."""
    return Money(amount_minor=amount_minor, currency="USD", type="fixed")


#: The fee for cancelling inside the late window.
LATE_FEE = usd(2000)


@dataclass
class MemoryLifecycleAdapter(MemoryAdapter):
    """:class:`MemoryAdapter` plus the lifecycle port: a 6-hour late window with a $20 fee, free moves."""

    late_window: timedelta = timedelta(hours=6)
    late_fee: Money = field(default_factory=lambda: LATE_FEE)
    #: What the quote reports as the reschedule fee (``None``: the platform cannot say).
    reschedule_fee: Money | None = field(default_factory=lambda: usd(0))
    #: The quote cannot say what cancelling costs (a platform without a fee rule it can state).
    unknown_cancellation_fee: bool = False
    versions: dict[str, int] = field(default_factory=dict)
    #: Each write's answer by its idempotency key (the platform's replay store).
    changes: dict[str, ChangedBooking] = field(default_factory=dict)
    #: Changes actually made (replays excluded).
    writes: int = 0
    #: Make the next change, then lose its answer (a broken connection after commit).
    lose_next_answer: bool = False
    #: The merchant edits the appointment right before the next write arrives (between read and write).
    edit_before_next_write: bool = False
    #: Each appointment's price when it was booked (the catalog's ``price`` may change later).
    booked_prices: dict[str, Money] = field(default_factory=dict)

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """The memory create, remembering the price it was booked at."""
        booking = await super().place_booking(request, customer_name)
        if isinstance(booking, Booking):
            self.booked_prices.setdefault(booking.id, self.price)
        return booking

    def _version(self, booking_id: str) -> str:
        return f"v{self.versions.get(booking_id, 1)}"

    def _bump(self, booking_id: str) -> None:
        self.versions[booking_id] = self.versions.get(booking_id, 1) + 1

    def edit_on_platform(self, booking_id: str) -> None:
        """The merchant edits the appointment (a note, say): its version moves, nothing the user sees."""
        self._bump(booking_id)

    def _quote(self, booking: Booking) -> ChangeQuote:
        start = parse_instant(booking.starts_at or "")
        assert start is not None
        now = self.clock.now()
        late_from = start - self.late_window
        late = now >= late_from
        active = booking.status == "booked" and now < start
        slot = self._slot(booking.starts_at_local or "", booking.service_id or "")
        service = self._service(slot.service_id)
        hours = int(self.late_window.total_seconds() // 3600)
        return ChangeQuote(
            booking_id=booking.id,
            organization_id=ORG,
            status=booking.status,
            version=self._version(booking.id),
            slot=CurrentSlot(
                service_id=slot.service_id,
                service_name=service.name if service is not None else slot.service_id,
                schedule_id=slot.schedule_id,
                starts_at_local=slot.starts_at_local,
                ends_at_local=slot.ends_at_local,
                provider_id=slot.provider_id,
                provider_name=slot.provider_name,
                starts_at=slot.starts_at,
                ends_at=slot.ends_at,
                schedule_timezone=slot.schedule_timezone,
                price=self.booked_prices.get(booking.id, slot.price),
            ),
            cancellable=active,
            reschedulable=active,
            cancellation_fee=None if self.unknown_cancellation_fee else (self.late_fee if late else usd(0)),
            reschedule_fee=self.reschedule_fee,
            fee_applies_from=format_instant(late_from),
            fee_reason=f"inside the {hours}-hour late-cancellation window" if late else None,
            late_cancellation_fee=self.late_fee,
        )

    def _found(self, booking_id: str, call: str) -> Booking | Problem:
        if down := self._upstream(call):
            return down
        booking = self.bookings.get(booking_id)
        return (
            booking if booking is not None else problem(ProblemCode.BOOKING_NOT_FOUND, "No such appointment.")
        )

    async def quote_change(self, request: ChangeRequest) -> ChangeQuote | Problem:
        """The change quote now, on this platform's clock."""
        self._enter("quote_change")
        booking = self._found(request.booking_id, "GET /api/appointments/{id}/change-quote")
        return booking if isinstance(booking, Problem) else self._quote(booking)

    def _writable(
        self, key: str, booking_id: str, version: str, call: str
    ) -> ChangedBooking | Booking | Problem:
        if key in self.changes:
            return self.changes[key]
        if self.edit_before_next_write:
            self.edit_before_next_write = False
            self.edit_on_platform(booking_id)
        booking = self._found(booking_id, call)
        if isinstance(booking, Problem):
            return booking
        if self._version(booking_id) != version:
            return problem(ExtensionCode.BOOKING_CHANGED, "The appointment changed.", retryable=True)
        return booking

    def _made(self, key: str, changed: ChangedBooking) -> ChangedBooking | Problem:
        self.bookings[changed.booking.id] = changed.booking
        self._bump(changed.booking.id)
        self.changes[key] = changed
        self.writes += 1
        if self.lose_next_answer:
            self.lose_next_answer = False
            return problem(ExtensionCode.UPSTREAM_UNAVAILABLE, "The answer was lost.", retryable=True)
        return changed

    async def cancel(self, request: CancelRequest) -> ChangedBooking | Problem:
        """Cancel at the expected version, once per key."""
        self._enter("cancel")
        call = "POST /api/appointments/{id}/cancel"
        booking = self._writable(request.idempotency_key, request.booking_id, request.expected_version, call)
        if not isinstance(booking, Booking):
            return booking
        quote = self._quote(booking)
        if not quote.cancellable or quote.cancellation_fee is None:
            return problem(ExtensionCode.BOOKING_NOT_CANCELLABLE, "Not cancellable.")
        cancelled = booking.model_copy(update={"status": "cancelled"})
        return self._made(request.idempotency_key, ChangedBooking(cancelled, quote.cancellation_fee))

    async def reschedule(self, request: RescheduleRequest) -> ChangedBooking | Problem:
        """Take the new slot and release the old one in one step, at the expected version, once per key."""
        self._enter("reschedule")
        call = "POST /api/appointments/{id}/reschedule"
        booking = self._writable(request.idempotency_key, request.booking_id, request.expected_version, call)
        if not isinstance(booking, Booking):
            return booking
        if not self._quote(booking).reschedulable:
            return problem(ExtensionCode.BOOKING_NOT_RESCHEDULABLE, "Not reschedulable.")
        taken = any(
            other.status == "booked" and other.starts_at_local == request.starts_at_local
            for other in self.bookings.values()
        )
        offered = self._offered(request.starts_at_local) and (request.schedule_id, request.provider_id) == (
            SCHEDULE,
            PROVIDER,
        )
        if taken or not offered:
            return problem(ProblemCode.SLOT_TAKEN, "That slot is not free.")
        slot = self._slot(request.starts_at_local, booking.service_id or "")
        moved = booking.model_copy(
            update={
                "starts_at": slot.starts_at,
                "ends_at": slot.ends_at,
                "starts_at_local": slot.starts_at_local,
                "ends_at_local": slot.ends_at_local,
            }
        )
        return self._made(request.idempotency_key, ChangedBooking(moved, self.reschedule_fee or usd(0)))
