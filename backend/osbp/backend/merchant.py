"""Status changes of an appointment: confirm, cancel, complete, no-show and reschedule, on every surface.

:data:`ACTIONS` is the platform's one status-transition table: the merchant's surface
(``…/merchant/appointments/{id}/…``) and the customer's (``…/appointments/{id}/cancel`` and
``…/reschedule``, see `osbp.backend.changes`, and the deprecated ``…/appointments/{id}/no-show``) apply the
same rules through :func:`apply` and :func:`move`; only the actor the webhook event names and the refusal's
problem code differ per surface. Each change runs in one write transaction (`BEGIN IMMEDIATE`; on
PostgreSQL after an advisory lock on the appointment) that checks the appointment's stored status against
the platform clock, applies the change, bumps the appointment's `version` and queues its webhook event, so
the event exists exactly when the change committed. What each action accepts (anything else is 409:
`appointment_transition_not_allowed` on the merchant's surface, naming the `action` and the appointment's
`appointment_status`; `appointment_not_cancellable` or `appointment_not_reschedulable` on the customer's):

    confirm     pending, before its start              -> confirmed
    cancel      pending, or confirmed before its end   -> cancelled
    complete    confirmed, once started                -> completed
    no-show     confirmed, once started                -> no_show
    reschedule  pending or confirmed, before its start -> same status, another free time

An action whose outcome already holds (cancel of a cancelled appointment, reschedule to its own time)
answers 200 with the appointment unchanged and no event, so retrying after a lost answer is safe. A
reschedule obeys the create's slot rules (offered start, in the future, no overlap with the provider's
other active appointments; the partial unique index, and on PostgreSQL the exclusion constraint, are the
backstop), inside the same kind of transaction as a create: the new time is taken and the old one released
in one commit, or nothing changes. The merchant's keeps provider, service and location.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from osbp.backend import webhook_events
from osbp.backend.appointments import appointment_out, find, native_status, set_status
from osbp.backend.availability import check_bookable, eligible
from osbp.backend.catalog import get_location, get_organization, get_provider
from osbp.backend.db import Database
from osbp.backend.dialects import serialise
from osbp.backend.models import ACTIVE_STATUSES, Appointment, Service
from osbp.backend.problems import ProblemError
from osbp.backend.tokens import TokenSource
from osbp.backend.wire import DATE_PATTERN, TIME_PATTERN, AppointmentOut, AppointmentTimes

__all__ = [
    "ACTIONS",
    "Action",
    "Moved",
    "Refusal",
    "Reschedule",
    "Slot",
    "act",
    "apply",
    "lock_appointment",
    "move",
    "reschedule",
]


def _started(appointment: Appointment, now: datetime) -> bool:
    return appointment.starts_utc <= now.timestamp()


def _ended(appointment: Appointment, now: datetime) -> bool:
    return appointment.ends_utc <= now.timestamp()


@dataclass(frozen=True)
class Action:
    """A status change: its name on the wire, the status it stores (None: it keeps the status and moves the
    time, a reschedule), and when it is allowed."""

    name: str
    target: str | None
    allowed: Callable[[Appointment, datetime], bool]


ACTIONS = {
    action.name: action
    for action in (
        Action("confirm", "confirmed", lambda a, now: a.status == "pending" and not _started(a, now)),
        Action(
            "cancel",
            "cancelled",
            lambda a, now: a.status == "pending" or (a.status == "confirmed" and not _ended(a, now)),
        ),
        Action("complete", "completed", lambda a, now: a.status == "confirmed" and _started(a, now)),
        Action("no-show", "no_show", lambda a, now: a.status == "confirmed" and _started(a, now)),
        Action("reschedule", None, lambda a, now: a.status in ACTIVE_STATUSES and not _started(a, now)),
    )
}


class Reschedule(BaseModel):
    """The new merchant-local start of the appointment (same provider, service and location)."""

    model_config = ConfigDict(extra="forbid")

    date: str = Field(pattern=DATE_PATTERN, examples=["2026-05-06"])
    time: str = Field(pattern=TIME_PATTERN, examples=["14:00"])

    @field_validator("date")
    @classmethod
    def _real_date(cls, value: str) -> str:
        date.fromisoformat(value)
        return value


def _refuse(action: str, appointment: Appointment, now: datetime) -> ProblemError:
    status = native_status(appointment, now)
    return ProblemError(
        "appointment_transition_not_allowed",
        f"The appointment is {status} (stored {appointment.status}); it cannot be given the merchant action "
        f"{action!r}.",
        # Not `status`: in a problem that member is the HTTP status code (RFC 9457 §3.1.2).
        {"action": action, "appointment_status": status},
    )


#: Builds the refusal of an action an appointment does not allow (the surface's problem).
Refusal = Callable[[str, Appointment, datetime], ProblemError]


def lock_appointment(session: Session, organization_id: str, appointment_id: str) -> None:
    """PostgreSQL: one change of an appointment at a time, across processes (SQLite's writers are one).

    Taken after the Idempotency-Key's lock and before the provider's (`dialects.serialise`).
    """
    serialise(session, f"appointment:{organization_id}:{appointment_id}")


def apply(
    session: Session,
    appointment: Appointment,
    service: Service,
    *,
    action: Action,
    now: datetime,
    tokens: TokenSource,
    actor: webhook_events.Actor,
    refusal: Refusal,
    **event: Any,
) -> AppointmentOut:
    """Apply a status change in the caller's transaction (or confirm it already holds: no event)."""
    assert action.target is not None, "a reschedule moves the appointment: use move()"
    if appointment.status == action.target:
        return appointment_out(appointment, service, now)
    if not action.allowed(appointment, now):
        raise refusal(action.name, appointment, now)
    return set_status(
        session, appointment, service, target=action.target, actor=actor, now=now, tokens=tokens, **event
    )


def act(
    db: Database,
    *,
    organization_id: str,
    appointment_id: str,
    action: Action,
    now: datetime,
    tokens: TokenSource,
    actor: webhook_events.Actor = "merchant",
    refusal: Refusal = _refuse,
) -> AppointmentOut:
    """Apply a status change (or confirm it already holds: 200, unchanged, no event) and queue its event."""
    with db.write() as session:
        lock_appointment(session, organization_id, appointment_id)
        appointment, service = find(session, organization_id, appointment_id)
        return apply(
            session, appointment, service, action=action, now=now, tokens=tokens, actor=actor, refusal=refusal
        )


@dataclass(frozen=True)
class Slot:
    """Where and when an appointment is to be: a location, a provider and a merchant-local start."""

    location_id: str
    provider_id: str
    date: str
    time: str


@dataclass(frozen=True)
class Moved:
    """A reschedule's outcome: the appointment as it is now, where it was, and whether it moved."""

    appointment: AppointmentOut
    previous: AppointmentTimes
    changed: bool


def _times(appointment: Appointment) -> AppointmentTimes:
    return AppointmentTimes(
        location_id=appointment.location_id,
        provider_id=appointment.provider_id,
        date=appointment.local_date,
        time=appointment.local_time,
        end_date=appointment.end_date,
        end_time=appointment.end_time,
        time_zone=appointment.time_zone,
    )


def move(
    session: Session,
    appointment: Appointment,
    service: Service,
    *,
    slot: Slot,
    now: datetime,
    tokens: TokenSource,
    actor: webhook_events.Actor,
    refusal: Refusal,
    reprice: bool = False,
) -> Moved:
    """Move the appointment to ``slot`` in the caller's transaction, or raise why not (409 / 404 / 422).

    Its old time is released and the new one taken by the same UPDATE, so the transaction commits both or
    neither. ``reprice`` charges the new slot at the service's current price, as its offer states it.
    """
    organization_id = appointment.organization_id
    if not ACTIONS["reschedule"].allowed(appointment, now):
        raise refusal("reschedule", appointment, now)
    previous = _times(appointment)
    if (previous.location_id, previous.provider_id, previous.date, previous.time) == (
        slot.location_id,
        slot.provider_id,
        slot.date,
        slot.time,
    ):
        return Moved(appointment_out(appointment, service, now), previous, changed=False)
    # PostgreSQL: the new slot's provider is re-checked by one writer at a time, as a create's is.
    serialise(session, f"provider:{organization_id}:{slot.provider_id}")
    location = get_location(session, organization_id, slot.location_id)
    provider = get_provider(session, organization_id, slot.provider_id)
    moved_elsewhere = (slot.location_id, slot.provider_id) != (previous.location_id, previous.provider_id)
    if moved_elsewhere and not eligible(service, location, provider):
        raise ProblemError(
            "provider_not_eligible", f"Provider {provider.id} does not offer {service.id} at {location.id}."
        )
    status = appointment.status
    # Off the active statuses while the new time is checked, so the appointment does not collide with
    # itself; the transaction holds the write lock, so no one else sees this state.
    appointment.status = "rescheduling"
    session.add(appointment)
    session.flush()
    opening = check_bookable(
        session,
        organization=get_organization(session, organization_id),
        service=service,
        location=location,
        provider=provider,
        day=date.fromisoformat(slot.date),
        start=time.fromisoformat(slot.time),
        now=now,
    )
    appointment.status = status
    appointment.location_id, appointment.provider_id = location.id, provider.id
    appointment.time_zone = location.time_zone
    appointment.local_date = opening.local_start.date().isoformat()
    appointment.local_time = opening.local_start.strftime("%H:%M")
    appointment.end_date = opening.local_end.date().isoformat()
    appointment.end_time = opening.local_end.strftime("%H:%M")
    appointment.starts_utc, appointment.ends_utc = opening.start_utc, opening.end_utc
    if reprice:
        appointment.price_kind, appointment.currency = service.price_kind, service.currency
        appointment.price_amount = service.price_amount if service.price_kind == "fixed" else None
    appointment.version += 1
    session.add(appointment)
    session.flush()
    moved = appointment_out(appointment, service, now)
    webhook_events.record(
        session,
        event_type="appointment.rescheduled",
        appointment=moved,
        actor=actor,
        now=now,
        tokens=tokens,
        previous=previous.model_dump(mode="json"),
    )
    return Moved(moved, previous, changed=True)


def reschedule(
    db: Database,
    *,
    organization_id: str,
    appointment_id: str,
    request: Reschedule,
    now: datetime,
    tokens: TokenSource,
) -> AppointmentOut:
    """Move the appointment to another free start of its provider, or raise why not (409 / 404)."""
    try:
        with db.write() as session:
            lock_appointment(session, organization_id, appointment_id)
            appointment, service = find(session, organization_id, appointment_id)
            slot = Slot(appointment.location_id, appointment.provider_id, request.date, request.time)
            outcome = move(
                session,
                appointment,
                service,
                slot=slot,
                now=now,
                tokens=tokens,
                actor="merchant",
                refusal=_refuse,
            )
            return outcome.appointment
    except IntegrityError:
        raise ProblemError("slot_taken", "The provider's time was booked by a concurrent request.") from None
