"""Status changes of an appointment: confirm, cancel, complete, no-show and reschedule, on every surface.

:data:`ACTIONS` is the platform's one status-transition table: the merchant's surface
(``…/merchant/appointments/{id}/…``) and the customer's (``…/appointments/{id}/cancel``, and the
deprecated ``…/appointments/{id}/no-show``) apply the same rules through :func:`act`; only the actor the
webhook event names and the refusal's problem code differ per surface. Each is one `BEGIN IMMEDIATE` write
transaction that checks the appointment's stored status against the platform clock, applies the change and
queues its webhook event, so the event exists exactly when the change committed. What each action accepts
(anything else is 409: `appointment_transition_not_allowed` on the merchant's surface, naming the `action`
and the appointment's `appointment_status`; `appointment_not_cancellable` on the customer's):

    confirm     pending, before its start              -> confirmed
    cancel      pending, or confirmed before its end   -> cancelled
    complete    confirmed, once started                -> completed
    no-show     confirmed, once started                -> no_show
    reschedule  pending or confirmed, before its start -> same status, another free time

An action whose outcome already holds (cancel of a cancelled appointment, reschedule to its own time)
answers 200 with the appointment unchanged and no event, so retrying after a lost answer is safe. A
reschedule keeps the provider, service and location and obeys the create's slot rules (offered start,
in the future, no overlap with the provider's other active appointments; the partial unique index is the
backstop), inside the same kind of transaction as a create.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.exc import IntegrityError

from osbp.backend import webhook_events
from osbp.backend.appointments import appointment_out, find, native_status, set_status
from osbp.backend.availability import check_bookable
from osbp.backend.catalog import get_location, get_organization, get_provider
from osbp.backend.db import Database
from osbp.backend.models import Appointment
from osbp.backend.problems import ProblemError
from osbp.backend.tokens import TokenSource
from osbp.backend.wire import DATE_PATTERN, TIME_PATTERN, AppointmentOut

__all__ = ["ACTIONS", "Action", "Refusal", "Reschedule", "act", "reschedule"]


def _started(appointment: Appointment, now: datetime) -> bool:
    return appointment.starts_utc <= now.timestamp()


def _ended(appointment: Appointment, now: datetime) -> bool:
    return appointment.ends_utc <= now.timestamp()


@dataclass(frozen=True)
class Action:
    """A merchant status change: its name on the wire, the status it stores, and when it is allowed."""

    name: str
    target: str
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
        appointment, service = find(session, organization_id, appointment_id)
        if appointment.status == action.target:
            return appointment_out(appointment, service, now)
        if not action.allowed(appointment, now):
            raise refusal(action.name, appointment, now)
        return set_status(
            session, appointment, service, target=action.target, actor=actor, now=now, tokens=tokens
        )


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
            appointment, service = find(session, organization_id, appointment_id)
            if appointment.status not in ("pending", "confirmed") or _started(appointment, now):
                raise _refuse("reschedule", appointment, now)
            if (appointment.local_date, appointment.local_time) == (request.date, request.time):
                return appointment_out(appointment, service, now)
            previous = {
                "date": appointment.local_date,
                "time": appointment.local_time,
                "end_date": appointment.end_date,
                "end_time": appointment.end_time,
            }
            status = appointment.status
            # Off the active statuses while the new time is checked, so the appointment does not collide
            # with itself; the transaction holds the write lock, so no one else sees this state.
            appointment.status = "rescheduling"
            session.add(appointment)
            session.flush()
            opening = check_bookable(
                session,
                organization=get_organization(session, organization_id),
                service=service,
                location=get_location(session, organization_id, appointment.location_id),
                provider=get_provider(session, organization_id, appointment.provider_id),
                day=date.fromisoformat(request.date),
                start=time.fromisoformat(request.time),
                now=now,
            )
            appointment.status = status
            appointment.local_date = opening.local_start.date().isoformat()
            appointment.local_time = opening.local_start.strftime("%H:%M")
            appointment.end_date = opening.local_end.date().isoformat()
            appointment.end_time = opening.local_end.strftime("%H:%M")
            appointment.starts_utc, appointment.ends_utc = opening.start_utc, opening.end_utc
            session.add(appointment)
            session.flush()
            moved = appointment_out(appointment, service, now)
            webhook_events.record(
                session,
                event_type="appointment.rescheduled",
                appointment=moved,
                actor="merchant",
                now=now,
                tokens=tokens,
                previous=previous,
            )
            return moved
    except IntegrityError:
        raise ProblemError("slot_taken", "The provider's time was booked by a concurrent request.") from None
