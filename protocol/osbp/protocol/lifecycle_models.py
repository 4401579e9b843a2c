"""Wire models of the lifecycle extension (docs/lifecycle.md): its mandate, two tool inputs, two results.

The v0.1.0 models are untouched: :class:`LifecycleMandate` extends
:class:`~osbp.protocol.models.BookingMandate` with two actions and three optional fields, and only the
lifecycle tools take it, so booking.create's input (and its published schema) stays v0.1.0's. A mandate
without the extension's fields parses to the same values as a v0.1.0 mandate; unknown fields are rejected
in both.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from osbp.protocol.models import (
    Approval,
    BookingMandate,
    BookingStatus,
    Customer,
    Money,
    OSBPModel,
    ToolInput,
    ToolName,
)

__all__ = [
    "LIFECYCLE_ACTIONS",
    "BookingCancelInput",
    "BookingRescheduleInput",
    "CancelResult",
    "LifecycleAction",
    "LifecycleMandate",
    "RescheduleResult",
    "SlotPosition",
]

LifecycleAction = Literal["booking.cancel", "booking.reschedule"]
#: The extension's two dotted tool names (after the eight of v0.1.0).
LIFECYCLE_ACTIONS: tuple[LifecycleAction, ...] = ("booking.cancel", "booking.reschedule")


class LifecycleMandate(BookingMandate):
    """A BookingMandate that may also allow changing bookings (each field checked by the core, not here)."""

    # Widened for the extension's two actions; every reader only tests membership.
    allowed_actions: list[ToolName | LifecycleAction] | None = Field(  # type: ignore[assignment]
        default=None,
        description='Dotted tool names this mandate allows ("booking.cancel", "booking.reschedule" for '
        "the lifecycle tools; booking.create is then not required).",
    )
    max_cancellation_fee: Money | None = Field(
        default=None,
        description="Largest cancellation fee accepted now (fixed; default zero in max_price's currency).",
    )
    max_reschedule_fee: Money | None = Field(
        default=None,
        description="Largest reschedule fee accepted (fixed; default zero in max_price's currency).",
    )
    booking_ids: list[str] | None = Field(
        default=None, description="Bookings this mandate may change; omit for any owned, empty allows none."
    )


class BookingCancelInput(ToolInput):
    """booking.cancel: mandate, idempotency key and the booking; ``approval`` on the confirmed retry."""

    mandate: LifecycleMandate
    idempotency_key: str = Field(
        min_length=1, description="Fresh per logical change; reuse only to retry it."
    )
    booking_id: str = Field(description="The booking_id of a booking.create receipt of this deployment.")
    customer: Customer | None = None
    approval: Approval | None = Field(
        default=None, description="Omit on the first call; add after the user confirmed the returned summary."
    )


class BookingRescheduleInput(ToolInput):
    """booking.reschedule: as booking.cancel plus the new slot's ids and merchant-local date and time."""

    mandate: LifecycleMandate
    idempotency_key: str = Field(
        min_length=1, description="Fresh per logical change; reuse only to retry it."
    )
    booking_id: str = Field(description="The booking_id of a booking.create receipt of this deployment.")
    schedule_id: str = Field(description="The new slot's schedule_id.")
    provider_id: str = Field(description="The new slot's provider_id.")
    date: str = Field(description='Merchant-local date "YYYY-MM-DD" from the new slot\'s starts_at_local.')
    time: str = Field(description='Merchant-local time "HH:MM" from the new slot\'s starts_at_local.')
    customer: Customer | None = None
    approval: Approval | None = Field(
        default=None, description="Omit on the first call; add after the user confirmed the returned summary."
    )
    verification_code: str | None = Field(
        default=None, description="Only on the retry after requires_verification: the customer's raw code."
    )


class SlotPosition(OSBPModel):
    """Where an appointment sits: its start and end as instants and merchant wall-clock, zone, provider."""

    starts_at: str | None = None
    starts_at_local: str
    ends_at: str | None = None
    ends_at_local: str | None = None
    schedule_timezone: str | None = None
    provider_id: str | None = None


class CancelResult(OSBPModel):
    """booking.cancel's value: the receipt id of the change, the booking, its status and the fee charged."""

    id: str
    booking_id: str
    status: BookingStatus
    fee: Money
    text: str


class RescheduleResult(CancelResult):
    """booking.reschedule's value: as booking.cancel's, plus where the appointment was and is now."""

    previous: SlotPosition
    current: SlotPosition
